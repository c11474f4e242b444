import type { MailPolicy, MailSummary } from '../sandbox-protocol.js';
import { ProxyRefusal } from './errors.js';

type MailPolicyModule = typeof import('../mail-policy.js');

/**
 * Read a mail send's message and judge it against the send policy, the same way on both walls
 * (the in-sandbox proxy and the host's egress gateway; docs/proxy.md#send-policy). The policy
 * module is passed in because each wall loads it its own way (the proxy on first use, as a chunk
 * of its own). A message that cannot be read strictly, or that the policy blocks, is refused;
 * `data` gets the recipient count for the audit record.
 */
export function judgeMail(
  mp: MailPolicyModule,
  body: Buffer,
  policy: MailPolicy,
  data: Record<string, unknown>,
  o: { headOnly?: boolean } = {},
): { summary: MailSummary; verdict: Exclude<ReturnType<MailPolicyModule['judge']>, { verdict: 'block' }> } {
  let summary: MailSummary;
  try {
    // headOnly (the proxy): the header block alone decides recipients; the gateway reads all of it.
    const head = o.headOnly ? mp.rawHead(body) : null;
    summary = head ? mp.summarise(head, { headOnly: true }) : mp.summarise(mp.rawMessage(body));
  } catch (err) {
    if (err instanceof mp.MailParseError) throw new ProxyRefusal(err.code, err.message);
    throw err;
  }
  data.recipients = summary.to + summary.cc + summary.bcc;
  const verdict = mp.judge(policy, summary);
  if (verdict.verdict === 'block') throw new ProxyRefusal('ERR_MAIL_BLOCKED', verdict.reason);
  return { summary, verdict };
}
