/** The small part of oidc-provider v9 (no bundled types) that emulator/oidc.ts uses. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  type Ctx = { path: string; body: unknown; type: string };
  interface Interaction {
    uid: string;
    prompt: { name: string; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId: string };
    grantId?: string;
  }
  interface GrantInstance {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }
  interface GrantClass {
    new (o: { accountId: string; clientId: string }): GrantInstance;
    find(id: string): Promise<GrantInstance | undefined>;
  }
  export default class Provider {
    constructor(
      issuer: string,
      config: Record<string, unknown> & {
        interactions?: { url: (ctx: Ctx, interaction: Interaction) => string };
        findAccount?: (
          ctx: Ctx,
          id: string,
        ) => Promise<{ accountId: string; claims: () => Promise<Record<string, unknown>> } | undefined>;
        renderError?: (ctx: Ctx, out: Record<string, unknown>) => Promise<void>;
      },
    );
    use(fn: (ctx: Ctx, next: () => Promise<void>) => Promise<void>): this;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      opts?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    Grant: GrantClass;
    /** Opaque access tokens (emulator/tickets-auth.ts verifies them as the resource server). */
    AccessToken: {
      find(token: string): Promise<
        | {
            accountId: string;
            clientId: string;
            scope?: string;
            aud?: string | string[];
            exp: number;
            isExpired: boolean;
          }
        | undefined
      >;
    };
    on(
      event: string,
      fn: (ctx: { oidc: { params?: Record<string, unknown> } }, client: { clientId: string }) => void,
    ): this;
  }
}
