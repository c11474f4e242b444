/**
 * What the identity area needs from the daemon, handed in through ctx.services
 * (web/ declares, daemon/ implements and wires).
 */

/** Live sandboxes of a user. Optional: without it, deactivation ends web sessions only. */
export interface SandboxControl {
  /** Stop every live sandbox of the user at once (deactivated by directory sync); how many, when known. */
  killForUser(userId: number): Promise<number | void> | number | void;
  /**
   * Optional hook: the users' agent policy changed. The daemon's session manager does not
   * implement it: the session start recomputes the policy for every new sandbox, and warm
   * sandboxes keep the one they started with (docs/identity.md).
   */
  policyChanged?(userIds: number[]): void;
}

/** Runs directory-sync jobs in the background (daemon/directory-sync implements it). */
export interface DirectorySyncService {
  /** Start `run_directory_sync(jobId)` in the background; returns at once. */
  start(jobId: number): void;
  /** Fail the connection's unfinished jobs whose process is gone, so they do not block a new one. */
  recoverStale?(connectionId: number): Promise<number> | number;
}
