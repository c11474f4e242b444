// The server-wide send policy (GET/PUT /api/admin/mail-policy; docs/proxy.md#send-policy): the
// recipient domains always allowed and always blocked, what happens to any other recipient, and
// the limits. Every problem is said as a sentence next to the form, before anything is sent when
// the page can tell, else as the server said it, with the field named in words.
import { useState } from 'preact/hooks';
import type { ServerMailPolicyView } from '../../../admin-api.js';
import { api, ApiError } from '../api.js';
import { Field, fmtTime, hintFor, PageTitle, Section, Select, Status, useActions, useLoad } from './common.js';
import { Form, Loaded, Submit } from './forms.js';

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const OTHER: [string, string][] = [
  ['ask', 'Ask the user in the chat first'],
  ['allow', 'Send without asking'],
  ['block', 'Refuse the send'],
];
/** The limits PUT /api/admin/mail-policy accepts (as AIRLOCK_MAIL_* does). */
const LIMITS = {
  max_recipients: { label: 'Most recipients per message', min: 1, max: 500 },
  max_per_hour: { label: 'Most messages per hour per user', min: 1, max: 100_000 },
  approval_timeout_s: { label: 'Approval timeout (seconds)', min: 5, max: 105 },
} as const;
type Limit = keyof typeof LIMITS;
const LABEL: Record<string, string> = {
  allow_domains: 'Always allowed domains',
  block_domains: 'Always blocked domains',
  other: 'Other recipients',
  ...Object.fromEntries(Object.entries(LIMITS).map(([k, v]) => [k, v.label])),
};

interface Draft {
  allow: string;
  block: string;
  other: string;
  limits: Record<Limit, string>;
}

const domainsOf = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);

function draftOf(p: ServerMailPolicyView): Draft {
  return {
    allow: p.allow_domains.join('\n'),
    block: p.block_domains.join('\n'),
    other: p.other,
    limits: {
      max_recipients: String(p.max_recipients),
      max_per_hour: String(p.max_per_hour),
      approval_timeout_s: String(p.approval_timeout_s),
    },
  };
}

/** The problems of a draft, as sentences (empty: it can be sent). */
export function draftProblems(d: Draft): string[] {
  const out: string[] = [];
  for (const [field, text] of [
    ['allow_domains', d.allow],
    ['block_domains', d.block],
  ] as const) {
    for (const x of domainsOf(text)) {
      if (x.includes('@'))
        out.push(`${LABEL[field]}: "${x}" is an address; write only its domain (what comes after the @).`);
      else if (!DOMAIN.test(x))
        out.push(`${LABEL[field]}: "${x}" is not a domain name; write it in lower case, like corp.example.`);
    }
  }
  const both = domainsOf(d.allow).filter((x) => domainsOf(d.block).includes(x));
  if (both.length)
    out.push(
      `${both.join(', ')} ${both.length === 1 ? 'is' : 'are'} both allowed and blocked; a blocked domain always wins, so remove it from one list.`,
    );
  for (const k of Object.keys(LIMITS) as Limit[]) {
    const { label, min, max } = LIMITS[k];
    const v = d.limits[k].trim();
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max)
      out.push(`${label} must be a whole number from ${min.toLocaleString()} to ${max.toLocaleString()}.`);
  }
  return out;
}

/** The server's problems as sentences: "allow_domains.1: …" → "Always allowed domains, entry 2: …". */
function serverProblems(e: unknown): string[] | null {
  if (!(e instanceof ApiError) || !Array.isArray(e.detail.problems)) return null;
  return (e.detail.problems as { field?: string; message?: string }[]).map((p) => {
    const [name, index] = String(p.field ?? '').split('.');
    const where = LABEL[name]
      ? `${LABEL[name]}${index !== undefined ? `, entry ${Number(index) + 1}` : ''}`
      : 'The policy';
    const why = String(p.message ?? '')
      .replace(/^[\w.]+: /, '')
      .replace(/\.?$/, '.');
    return `${where}: ${why}`;
  });
}

export function MailPolicyPage() {
  const [policy, failed, , setPolicy] = useLoad(() => api<ServerMailPolicyView>('GET', '/api/admin/mail-policy'));
  return (
    <Loaded failed={failed} loading={!policy}>
      {policy && <PolicyPage policy={policy} onSaved={setPolicy} />}
    </Loaded>
  );
}

function PolicyPage({ policy, onSaved }: { policy: ServerMailPolicyView; onSaved(p: ServerMailPolicyView): void }) {
  return (
    <>
      <PageTitle
        title="Send policy"
        intro="Who the agents may send mail to, for every user of this server. Agent policies can add domains and make the limits stricter for their teams."
      />
      <Section title="Server-wide send policy" headingId="mail-policy-heading">
        <PolicyForm policy={policy} onSaved={onSaved} />
        <p class="muted" id="mail-policy-updated">
          {policy.updated_by === null
            ? 'From the server settings (AIRLOCK_MAIL_*); not changed here yet.'
            : `Last changed ${fmtTime(policy.updated_at)}.`}
        </p>
      </Section>
    </>
  );
}

function PolicyForm({ policy, onSaved }: { policy: ServerMailPolicyView; onSaved(p: ServerMailPolicyView): void }) {
  const [d, setD] = useState<Draft>(() => draftOf(policy));
  const [problems, setProblems] = useState<string[]>([]);
  const status = useActions();
  const save = () => {
    const found = draftProblems(d);
    setProblems(found);
    if (found.length) return;
    void status.run('save', async () => {
      const body = {
        allow_domains: domainsOf(d.allow),
        block_domains: domainsOf(d.block),
        other: d.other,
        ...Object.fromEntries((Object.keys(LIMITS) as Limit[]).map((k) => [k, Number(d.limits[k])])),
      };
      try {
        const saved = await api<ServerMailPolicyView>('PUT', '/api/admin/mail-policy', body);
        setD(draftOf(saved));
        onSaved(saved);
        status.ok('The send policy is saved; it applies to the next send on every node.');
      } catch (e) {
        const list = serverProblems(e);
        if (!list) throw e;
        setProblems(list);
      }
    });
  };
  const setLimit = (k: Limit, v: string) => setD({ ...d, limits: { ...d.limits, [k]: v } });
  return (
    <Form id="mail-policy-form" onSubmit={save} noValidate>
      <div class="mail-policy-grid">
        <Field
          id="mp-allow"
          label={LABEL.allow_domains}
          hint="One domain a line (or separated by commas); subdomains are included: corp.example also allows eu.corp.example."
        >
          <textarea
            id="mp-allow"
            rows={5}
            aria-describedby={hintFor('mp-allow')}
            value={d.allow}
            onInput={(e) => setD({ ...d, allow: e.currentTarget.value })}
          />
        </Field>
        <Field id="mp-block" label={LABEL.block_domains} hint="Refused even when another list allows them.">
          <textarea
            id="mp-block"
            rows={5}
            aria-describedby={hintFor('mp-block')}
            value={d.block}
            onInput={(e) => setD({ ...d, block: e.currentTarget.value })}
          />
        </Field>
      </div>
      <Field id="mp-other" label="A recipient in neither list" hint="What happens to mail for any other domain.">
        <Select
          id="mp-other"
          aria-describedby={hintFor('mp-other')}
          value={d.other}
          onChange={(v) => setD({ ...d, other: v })}
          options={OTHER}
        />
      </Field>
      <LimitFields d={d} setLimit={setLimit} />
      {problems.length > 0 && (
        <div class="banner error" role="alert" id="mail-policy-problems">
          <strong>
            {problems.length === 1
              ? 'The policy was not saved:'
              : `The policy was not saved; ${problems.length} things to fix:`}
          </strong>
          <ul class="problems">
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        </div>
      )}
      <div class="actions">
        <Submit id="mail-policy-save" text="Save send policy" disabled={status.busy === 'save'} />
      </div>
      <Status id="mail-policy-status" notice={status.notice} />
    </Form>
  );
}

/** The policy's numeric limits, each with its range. */
function LimitFields({ d, setLimit }: { d: Draft; setLimit(k: Limit, v: string): void }) {
  return (
    <div class="mail-policy-limits">
      {(Object.keys(LIMITS) as Limit[]).map((k) => (
        <Field
          key={k}
          id={`mp-${k}`}
          label={LIMITS[k].label}
          hint={`${LIMITS[k].min.toLocaleString()} to ${LIMITS[k].max.toLocaleString()}`}
        >
          <input
            type="text"
            inputMode="numeric"
            id={`mp-${k}`}
            aria-describedby={hintFor(`mp-${k}`)}
            value={d.limits[k]}
            onInput={(e) => setLimit(k, e.currentTarget.value)}
          />
        </Field>
      ))}
    </div>
  );
}
