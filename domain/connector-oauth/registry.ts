import { AppError, type Encryptor } from '../../core/index.js';
import type { OAuthConnectorLookup, OAuthConnectorSettings } from '../../core/connector-oauth.js';
import {
  enabledConnectors,
  inAudience,
  keepRegisteredClient,
  resolveConnector,
  type ResolvedConnector,
} from '../connectors/store.js';
import type { Sql } from '../db/index.js';

/** The OAuth client's view of a registry entry: its pre-registered client secret revealed only for a request. */
function settingsOf(c: ResolvedConnector): OAuthConnectorSettings {
  const secret = c.oauthClientSecret;
  return {
    id: c.id,
    label: c.label,
    url: c.url,
    clientId: c.oauthClientId ?? undefined,
    clientSecret: secret ? { reveal: () => secret } : undefined,
  };
}

const usable = (c: ResolvedConnector | undefined): c is ResolvedConnector => !!c && c.enabled && c.authKind === 'oauth';

/**
 * The OAuth connectors of the connector registry (migration 030, domain/connectors/): enabled,
 * auth kind `oauth`, offered to the users of their audience. Read at each call, so a connector
 * disabled or changed by an admin is seen at once.
 */
export function registryLookup(db: Sql, enc: Encryptor): OAuthConnectorLookup {
  return {
    async get(id) {
      const c = await resolveConnector(db, enc, id);
      return usable(c) ? settingsOf(c) : undefined;
    },
    async forUser(userId) {
      const out: OAuthConnectorSettings[] = [];
      for (const c of await enabledConnectors(db, enc))
        if (usable(c) && (await inAudience(db, c.audience, userId))) out.push(settingsOf(c));
      return out;
    },
    async mayUse(id, userId) {
      const c = await resolveConnector(db, enc, id);
      return usable(c) && inAudience(db, c.audience, userId);
    },
    async keepRegisteredClient(id, client) {
      await keepRegisteredClient(db, enc, id, client);
      const c = await resolveConnector(db, enc, id);
      if (!c?.oauthClientId)
        throw new AppError('ERR_CONNECTOR_OAUTH_UNKNOWN', `no OAuth connector '${id.slice(0, 64)}'`);
      return { client_id: c.oauthClientId, ...(c.oauthClientSecret ? { client_secret: c.oauthClientSecret } : {}) };
    },
  };
}
