/**
 * Faults injected while the simulated users run (docs/capacity.md "Chaos"), shared by
 * bench/chaos.bench.ts and test/docker/chaos.test.ts, and the counts the run is judged by.
 */
import type Docker from 'dockerode';
import { nowMs } from '../../bench/lib.js';
import { ownedContainers, type LoadNode, type Rig } from './load-rig.js';
import { mailCounts, summarize, type LoadUsers } from './load-users.js';
import { waitFor } from './wait.js';

export type Fault =
  | { at_s: number; what: 'kill-sandbox' }
  | { at_s: number; what: 'sigkill-daemon'; node: number }
  | { at_s: number; what: 'restart-postgres'; down_s: number }
  | { at_s: number; what: 'lose-node'; node: number; down_s: number };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** docker kill one running sandbox of any node (pool members included: a claimed one keeps its pool labels); the id killed, or null. */
export async function killSandbox(docker: Docker, rig: Rig): Promise<string | null> {
  const live = (await Promise.all(rig.nodes.map((n) => ownedContainers(docker, n.owner, true)))).flat();
  const victim = live[Math.floor(Math.random() * live.length)];
  if (!victim) return null;
  await docker
    .getContainer(victim.Id)
    .kill()
    .catch(() => undefined);
  return victim.Id.slice(0, 12);
}

/** SIGKILL the node while a turn runs (right after the model got a request), then start it again after `downMs`. */
async function restartNode(rig: Rig, n: LoadNode, downMs: number): Promise<void> {
  const asked = rig.model.requests.length;
  // No model request within 10 s (no turn running): the kill goes ahead all the same.
  await waitFor(() => rig.model.requests.length !== asked, 'a model request', 10_000, 10).catch(() => undefined);
  await n.stop('SIGKILL');
  await sleep(downMs);
  await n.start();
}

/** Play the faults at their times while the load runs `seconds`; a log line per fault. */
export async function playFaults(docker: Docker, rig: Rig, faults: Fault[], seconds: number): Promise<string[]> {
  const t0 = nowMs();
  const log: string[] = [];
  const at = (s: number) => sleep(Math.max(0, t0 + s * 1000 - nowMs()));
  const running = faults.map(async (f) => {
    await at(f.at_s);
    const s = Math.round((nowMs() - t0) / 100) / 10;
    if (f.what === 'kill-sandbox')
      log.push(`${s}s docker kill ${(await killSandbox(docker, rig)) ?? '(no live sandbox)'}`);
    else if (f.what === 'sigkill-daemon') {
      await restartNode(rig, rig.nodes[f.node], 0);
      log.push(`${s}s SIGKILL ${rig.nodes[f.node].id}, back after ${Math.round(nowMs() - t0 - s * 1000)} ms`);
    } else if (f.what === 'restart-postgres') {
      rig.pg!.pause();
      await sleep(f.down_s * 1000);
      rig.pg!.start();
      log.push(`${s}s PostgreSQL stopped for ${f.down_s} s and started again`);
    } else {
      await restartNode(rig, rig.nodes[f.node], f.down_s * 1000);
      log.push(`${s}s ${rig.nodes[f.node].id} lost (SIGKILL) for ${f.down_s} s, then started again`);
    }
  });
  await Promise.all(running);
  await at(seconds);
  return log;
}

/** The counts a chaos run is judged by (after LoadUsers.stop(): every chat checked). */
export function chaosCounts(rig: Rig, load: LoadUsers) {
  const s = summarize(load.records);
  const mail = mailCounts(rig, load.records);
  return {
    turns: s.turns,
    ended_with_done: s.done,
    refused_before_start: s.turns - s.done - s.hung,
    cut_and_followed_again: s.cut,
    hung: s.hung,
    more_than_one_done: load.records.filter((r) => r.dones > 1).length,
    lost_from_history: load.findings.lost.length,
    context_gaps: load.findings.contextGaps.length,
    chats_checked: load.findings.chatsChecked,
    mail_asked: mail.asked,
    mail_reported_sent: mail.reportedSent,
    mail_received: mail.received,
    sent_twice: mail.sentTwice.length,
    mail_received_not_reported: mail.receivedNotReported.length,
    mail_reported_not_received: mail.reportedNotReceived.length,
    mail_sent_but_model_told_failed: mail.sentButShownFailed.length,
    errors: s.errors,
    details: {
      lost: load.findings.lost,
      contextGaps: load.findings.contextGaps,
      sentTwice: mail.sentTwice,
      receivedNotReported: mail.receivedNotReported,
      reportedNotReceived: mail.reportedNotReceived,
      sentButShownFailed: mail.sentButShownFailed,
    },
  };
}
