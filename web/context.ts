import type { Request, Response, NextFunction, RequestHandler } from 'express';
import type { Config, Db, Logger, User } from '../core/index.js';
import { AuthError, AppError } from '../core/index.js';
import type { DbSessionStore } from './session-store.js';
import type { Database } from '../domain/db/index.js';

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

/** Services the daemon provides to the web app. Each area declares its own interface. */
export interface WebServices {
  [name: string]: unknown;
}

/** What every router factory receives. */
export interface WebContext {
  config: Readonly<Config>;
  /** The database: store modules in domain/ take `database.sql`. */
  database: Database;
  /** The SQLite connection for routes not yet on the data layer. */
  db: Db;
  log: Logger;
  sessions: DbSessionStore;
  services: WebServices;
}

/** 401 ERR_AUTH_REQUIRED unless a logged-in, active user is on the request. */
export const requireUser: RequestHandler = (req: Request, _res: Response, next: NextFunction) => {
  if (!req.user) return next(new AuthError('ERR_AUTH_REQUIRED', 'log in first'));
  next();
};

/** 401 when anonymous, 403 ERR_AUTH_FORBIDDEN when not a superuser. */
export const requireSuperuser: RequestHandler = (req: Request, _res: Response, next: NextFunction) => {
  if (!req.user) return next(new AuthError('ERR_AUTH_REQUIRED', 'log in first'));
  if (!req.user.is_superuser) return next(new AppError('ERR_AUTH_FORBIDDEN', 'superuser only', { status: 403 }));
  next();
};

/** Wrap an async handler so a rejection reaches the error middleware. */
export function asyncHandler(fn: (req: Request, res: Response, next: NextFunction) => Promise<unknown>): RequestHandler {
  return (req, res, next) => {
    fn(req, res, next).catch(next);
  };
}
