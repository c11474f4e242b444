import type { Request, Response, NextFunction, RequestHandler } from 'express';
import type { Config, ConnectorTokens, Encryptor, Logger, Metrics } from '../core/index.js';
import type { User } from '../domain/users.js';
import { AppError } from '../core/index.js';
import type { DbSessionStore } from './session-store.js';
import type { Database } from '../domain/db/index.js';
import type { AccountStore } from '../domain/accounts.js';
import type { DirectorySyncService, SandboxControl } from '../domain/identity/services.js';
import type { ChatService } from '../domain/chat/turn-service.js';
import type { AgentSessionCheck, AttachPort, OperatorPort, SandboxAdmin } from './ports.js';
import type { ApprovalDecider } from '../core/sandbox-protocol.js';
import type { OAuthConnectorLookup } from '../core/connector-oauth.js';

declare module 'express-session' {
  interface SessionData {
    userId?: number;
    csrfToken?: string;
    /** Pending OIDC / OAuth handshakes keyed by state. */
    oauth?: Record<string, unknown>;
  }
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      id: string;
      log: Logger;
      user?: User;
      /** The raw JSON body (signatures between nodes cover the bytes, not the parsed value). */
      rawBody?: Buffer;
      /** Sent by another node of the fleet (web/fleet.ts): never forwarded again. */
      fleetForwarded?: boolean;
    }
  }
}

/**
 * The ports the daemon hands the web app: every one is there, built in one place, the daemon's
 * composition root (daemon/serve.ts), or a test's (test/helpers/app.ts). Each area declares the
 * interface it needs. A server that runs no sandboxes (no Docker engine) gets the explicit
 * "no sandboxes" ports of web/services.ts, which answer with the coded errors the routes name
 * (e.g. ERR_CHAT_UNAVAILABLE, ERR_RUNTIME_UNAVAILABLE), not a missing port.
 */
export interface WebServices {
  /** Prometheus metrics (/metrics, login and turn counters). */
  metrics: Metrics;
  /** Runs chat turns (the session manager behind the fleet's view of it); its runner is null without sandboxes. */
  chat: ChatService;
  /** Ends or marks a user's live sandboxes (identity, accounts). */
  sandboxes: SandboxControl & { killForUser(userId: number, why?: string): Promise<unknown> | unknown };
  /** The live-sessions admin page (and ending a deleted chat's sandbox). */
  sandboxAdmin: SandboxAdmin;
  /** Whether an AGENT_USER_TOKEN's session is live (the agent API). */
  agentSessions: AgentSessionCheck;
  /** Runs directory-sync jobs in the background. */
  directorySync: DirectorySyncService;
  /** Connected accounts (encrypted at rest). */
  accounts: AccountStore;
  /** Pushes a new access token into the user's warm sandboxes. */
  tokenService: { pushToUser(userId: number, accessToken: string): Promise<void> };
  /** The operator API for commands another node sends (inspect, restart, kill). */
  operator: OperatorPort;
  /** A shell in a session's container for `sessions attach` from another node. */
  attach: AttachPort;
  /** Models the daemon can use beyond AIRLOCK_MODEL (agent policies may name them). */
  agentModels: () => string[];
  /** OAuth connectors' per-user tokens (core/connectors.ts ConnectorTokens). */
  connectorTokens: ConnectorTokens;
  /** The user's workspace, made and mounted with its quota (uploads: web/upload-routes.ts). */
  workspaces: { ensure(userId: number): string };
  /** Decides mail sends and connector calls held for the user's approval (domain/mail/gate.ts). */
  approvals: ApprovalDecider;
  /** The OAuth connectors a user may connect (the connector registry; web/connector-oauth-routes.ts). */
  oauthConnectors: OAuthConnectorLookup;
}

/** What every router factory receives. */
export interface WebContext {
  config: Readonly<Config>;
  /** The database: store modules in domain/ take `database.sql`. */
  database: Database;
  log: Logger;
  sessions: DbSessionStore;
  services: WebServices;
  /** The one at-rest encryptor (AIRLOCK_ENCRYPTION_KEY or the data folder's key): accounts, IdP secrets, memories. */
  encryptor: Encryptor;
}

/** 401 ERR_AUTH_REQUIRED unless a logged-in, active user is on the request. */
export const requireUser: RequestHandler = (req: Request, _res: Response, next: NextFunction) => {
  if (!req.user) return next(new AppError('ERR_AUTH_REQUIRED', 'log in first'));
  next();
};

/** 401 when anonymous, 403 ERR_AUTH_FORBIDDEN when not a superuser. */
export const requireSuperuser: RequestHandler = (req: Request, _res: Response, next: NextFunction) => {
  if (!req.user) return next(new AppError('ERR_AUTH_REQUIRED', 'log in first'));
  if (!req.user.is_superuser) return next(new AppError('ERR_AUTH_FORBIDDEN', 'superuser only'));
  next();
};

/** Wrap an async handler so a rejection reaches the error middleware. */
export function asyncHandler(
  fn: (req: Request, res: Response, next: NextFunction) => Promise<unknown>,
): RequestHandler {
  return (req, res, next) => {
    fn(req, res, next).catch(next);
  };
}
