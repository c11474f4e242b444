import t from 'tap';
import { runCase, type HostileResult } from '../fakes/hostile-client.js';
import { assertHostile, egressCases, proxyCases } from '../helpers/hostile-cases.js';
import { rawExchange, startProxyRig } from '../helpers/proxy-rig.js';

// The hostile table of test/docker/hostile-proxy.test.ts, run on the host against the same
// proxy code (fast feedback; the docker test runs it from inside a sandbox as the child's uid).

t.test('hostile proxy table: every case gets its status, only the allowed calls reach the upstream', async (t) => {
  const rig = await startProxyRig(t);
  const entries = proxyCases(rig.placeholders as never);
  t.ok(entries.length >= 150, `${entries.length} proxy cases`);
  const results: HostileResult[] = [];
  for (const e of entries) results.push(await runCase(rig.proxy.port, e.c));
  // Give any stray forwarding a chance to land before counting.
  await new Promise((r) => setTimeout(r, 200));
  assertHostile(t, entries, results, rig.upstream.requests);
  const stall = results.find((r) => r.id === 'stall-40')!;
  t.ok(stall.ms < 3000, `the legit send was answered in ${stall.ms} ms while 40 requests stalled`);
  t.ok(rig.proxy.stats().droppedHeaders >= 40, 'dropped headers are counted');
});

t.test(
  'hostile egress heads (a compromised supervisor on the egress socket): refused and coded by the gateway, only the allow-list goes through',
  async (t) => {
    const rig = await startProxyRig(t);
    const allowed = `127.0.0.1:${rig.upstream.port}`;
    const entries = egressCases(rig.socketPath, allowed);
    t.ok(entries.length >= 25, `${entries.length} egress cases`);
    const results: HostileResult[] = [];
    for (const e of entries) results.push(await runCase(0, e.c));
    await new Promise((r) => setTimeout(r, 200));
    assertHostile(t, entries, results, rig.upstream.requests);
    t.same(rig.upstream.requests, [], 'the upstream saw nothing');
    const ok = await rawExchange(
      { path: rig.socketPath },
      'GET /search/drive/v3/files?pageSize=1 HTTP/1.1\r\nHost: x\r\n\r\n',
      1000,
    );
    t.equal(
      ok.status,
      200,
      'the control: an allow-listed request of the session passes, the token injected on the host',
    );
    t.equal(rig.upstream.requests.length, 1);
  },
);
