/**
 * Adoption at daemon start: every container carrying our owner label is either adopted as a
 * live session, taken back into the warm pool, or removed. `decideAdoption` is the pure rule
 * (unit-tested without an engine); `surveyAndDecide` gathers the facts (engine listing, slot
 * folder, claim.json, a ping over the control socket) and removes what is not kept.
 *
 * | container                                   | supervisor ping             | claim.json           | decision |
 * |---------------------------------------------|-----------------------------|----------------------|----------|
 * | not running, or no slot folder              | —                           | —                    | drop     |
 * | running                                     | unreachable / no answer     | —                    | drop     |
 * | pool label, pool enabled                    | `hello`                     | none                 | pool     |
 * | any                                         | `started`, same session id  | valid, session free  | adopt (drop if its user may not be adopted) |
 * | anything else                               |                             |                      | drop     |
 */
import type { Clock, Logger } from '../../core/index.js';
import { LABEL_POOL, LABEL_SLOT, type OwnedSandbox, type SandboxDriver } from './sandbox-driver.js';
import { SandboxClient } from './sandbox-client.js';
import type { Sandbox } from './sandbox.js';
import type { Claim, SlotFolders } from './slots.js';
import { existsSync } from 'node:fs';

/** What the supervisor answered to `ping` (null: unreachable or no answer in time). */
export interface PingAnswer {
  state: string;
  session_id?: string;
}

export interface AdoptionFacts {
  running: boolean;
  /** The slot label names a folder of ours that still has its run/ folder. */
  hasSlotFolder: boolean;
  poolLabel: boolean;
  ping: PingAnswer | null;
  claim: Claim | undefined;
  poolEnabled: boolean;
  /** Another container already adopted in this pass serves the claim's session. */
  sessionTaken: boolean;
  /** The lifecycle's answer for the claim's user (false: deactivated or removed while no daemon ran). */
  userMayAdopt: boolean;
}

export type AdoptionDecision =
  { action: 'adopt'; claim: Claim } | { action: 'pool' } | { action: 'drop'; why: string; userDeactivated?: true };

export function decideAdoption(f: AdoptionFacts): AdoptionDecision {
  if (!f.running || !f.hasSlotFolder) return { action: 'drop', why: 'not running or no folder' };
  if (!f.ping) return { action: 'drop', why: 'supervisor unreachable' };
  if (f.ping.state === 'hello' && !f.claim) {
    if (f.poolLabel && f.poolEnabled) return { action: 'pool' };
    return { action: 'drop', why: f.poolLabel ? 'pool disabled' : 'unclaimed' };
  }
  if (f.ping.state === 'started' && f.claim && f.ping.session_id === f.claim.session_id) {
    if (f.sessionTaken) return { action: 'drop', why: 'session served by another container' };
    if (!f.userMayAdopt) return { action: 'drop', why: 'its user is no longer active', userDeactivated: true };
    return { action: 'adopt', claim: f.claim };
  }
  return { action: 'drop', why: 'unclaimed or inconsistent' };
}

export interface AdoptionDeps {
  driver: SandboxDriver;
  slots: SlotFolders;
  owner: string;
  poolEnabled: boolean;
  log: Logger;
  /** The runtime's clock: an adopted session's idle time starts now. */
  clock: Clock;
  mayAdopt?(s: { sessionId: string; userId: number }): boolean | Promise<boolean>;
}

export interface Adopted {
  /** Kept containers, connected; sessions carry sessionId/userId from their claim. */
  sessions: { sb: Sandbox; claim: Claim }[];
  pool: Sandbox[];
  /** Containers dropped because their user may no longer be adopted. */
  userDeactivated: number;
}

interface Survey {
  c: OwnedSandbox;
  facts: Omit<AdoptionFacts, 'sessionTaken' | 'userMayAdopt' | 'poolEnabled'>;
  client?: SandboxClient;
}

async function survey(deps: AdoptionDeps, c: OwnedSandbox): Promise<Survey> {
  const slot = deps.slots.dirOf(c.labels[LABEL_SLOT]);
  const base = {
    running: c.running,
    hasSlotFolder: !!slot && existsSync(slot.runDir),
    poolLabel: c.labels[LABEL_POOL] === '1',
    ping: null,
    claim: undefined,
  };
  if (!base.running || !base.hasSlotFolder) return { c, facts: base };
  let client: SandboxClient;
  try {
    client = await SandboxClient.connect(`${slot!.runDir}/control.sock`, 2000);
  } catch {
    return { c, facts: base };
  }
  let ping: PingAnswer | null;
  try {
    const r = await client.request({ type: 'ping' }, 3000);
    ping = { state: String(r.state), ...(typeof r.session_id === 'string' ? { session_id: r.session_id } : {}) };
  } catch {
    ping = null;
  }
  return { c, client, facts: { ...base, ping, claim: deps.slots.readClaim(slot!.dir) } };
}

/** Survey every owned container, decide, remove the dropped ones and leftover slot folders. */
export async function adoptOwned(deps: AdoptionDeps): Promise<Adopted> {
  const surveys = await Promise.all((await deps.driver.listOwned(deps.owner)).map((c) => survey(deps, c)));
  const out: Adopted = { sessions: [], pool: [], userDeactivated: 0 };
  const taken = new Set<string>();
  const keep = new Set<string>();
  const drops: Promise<void>[] = [];
  for (const { c, facts, client } of surveys) {
    const claim = facts.claim;
    let userMayAdopt = true;
    if (claim && deps.mayAdopt) {
      try {
        userMayAdopt = await deps.mayAdopt({ sessionId: claim.session_id, userId: claim.user_id });
      } catch (err) {
        // Unsure (the database did not answer): keep the container; the next start decides again.
        deps.log.warn(
          { sessionId: claim.session_id, err: (err as Error).message },
          'adoption check failed; keeping the container',
        );
      }
    }
    const d = decideAdoption({
      ...facts,
      poolEnabled: deps.poolEnabled,
      sessionTaken: !!claim && taken.has(claim.session_id),
      userMayAdopt,
    });
    const slot = deps.slots.dirOf(c.labels[LABEL_SLOT]);
    if (d.action === 'drop') {
      client?.close();
      if (d.userDeactivated) out.userDeactivated++;
      drops.push(
        deps.driver
          .remove(c.id)
          .catch(() => undefined)
          .then(() => {
            if (slot) deps.slots.remove(slot.dir);
            deps.log.info({ containerId: c.id.slice(0, 12), why: d.why }, 'removed container at start');
          }),
      );
      continue;
    }
    const sb: Sandbox = {
      ...slot!,
      containerId: c.id,
      containerName: c.name,
      state: d.action === 'pool' ? 'pool' : 'ready',
      createdAt: c.createdAt,
      lastUsedAt: deps.clock.now(),
      turns: 0,
      adopted: true,
      fromPool: facts.poolLabel,
      client,
    };
    keep.add(sb.slot);
    if (d.action === 'pool') {
      out.pool.push(sb);
    } else {
      taken.add(d.claim.session_id);
      sb.sessionId = d.claim.session_id;
      sb.userId = d.claim.user_id;
      sb.claimedAt = d.claim.claimed_at;
      sb.agentEnvDigest = d.claim.agent_env_digest;
      sb.modelRevision = d.claim.model_revision;
      if (sb.fromPool) sb.boundWorkspace = `${sb.dir}/workspace`;
      out.sessions.push({ sb, claim: d.claim });
    }
    deps.log.info({ containerId: c.id.slice(0, 12), sessionId: sb.sessionId ?? null }, 'adopted container');
  }
  await Promise.all(drops);
  // Folders without a live container of ours are leftovers.
  deps.slots.removeAllBut(keep);
  return out;
}
