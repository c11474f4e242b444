// Organisations (create, rename, delete), the chosen one's teams and agent policies, and any
// user's effective agent policy: /api/identity (docs/identity.md). #/admin/organisations/<org>/policy/<id>
// opens an organisation with one of its policies marked (the effective policy links there).
import { useEffect, useState } from 'preact/hooks';
import type {
  AgentCatalogView,
  AgentPolicyList,
  EffectiveAgentPolicyResponse,
  ExternalGroupList,
  Organisation,
  OrganisationList,
  TeamList,
} from '../../../admin-api.js';
import { api } from '../api.js';
import { TeamsSection } from './teams.js';
import { AgentPoliciesSection, listText, MailRules } from './agent-policies.js';
import {
  ErrorBox,
  Field,
  hintFor,
  Loading,
  Section,
  Select,
  Status,
  useActions,
  useLoad,
  useUserPicker,
  type Actions,
} from './common.js';
import { Form, Loaded, Page, Submit, UserQuery } from './forms.js';

/** The organisation and policy a link names (#/admin/organisations/<org>/policy/<id>), or nulls. */
function hashTarget(): { org: number | null; policy: number | null } {
  const m = /^#\/admin\/organisations\/(\d+)(?:\/policy\/(\d+))?/.exec(location.hash);
  return { org: m ? Number(m[1]) : null, policy: m?.[2] ? Number(m[2]) : null };
}

/** hashTarget(), again whenever the address changes while the page is shown. */
function useHashTarget() {
  const [target, setTarget] = useState(hashTarget);
  useEffect(() => {
    const on = () => setTarget(hashTarget());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return target;
}

export function OrganisationsPage() {
  const status = useActions();
  const [data, failed, reload] = useLoad(() => api<OrganisationList>('GET', '/api/identity/organisations'));
  const target = useHashTarget();
  const [picked, setPicked] = useState<number | null>(target.org);
  useEffect(() => {
    if (target.org !== null) setPicked(target.org);
  }, [target.org, target.policy]);
  const [name, setName] = useState('');

  const orgs = data?.organisations ?? [];
  const current = orgs.find((o) => o.id === picked) ?? orgs[0] ?? null;
  const create = () =>
    status.run('create', async () => {
      const o = await api<Organisation>('POST', '/api/identity/organisations', { name: name.trim() });
      setName('');
      await reload();
      setPicked(o.id);
      status.ok(`Organisation ${o.name} created.`);
    });

  return (
    <Page
      cls="admin orgs"
      title="Organisations, teams and agent policies"
      intro="Teams can follow a directory group: the sync then owns their members. Agent policies limit the tools and models of an organisation's members."
    >
      <Loaded failed={failed} loading={!data}>
        <Section title="Organisations">
          <Form class="row" id="org-form" onSubmit={create}>
            <Field id="org-name" label="New organisation name" hint="At most 100 characters">
              <input
                type="text"
                id="org-name"
                required
                maxLength={100}
                aria-describedby={hintFor('org-name')}
                value={name}
                onInput={(e) => setName(e.currentTarget.value)}
              />
            </Field>
            <Submit id="org-create" text="Create organisation" disabled={status.busy === 'create'} />
          </Form>
          <Status id="org-status" notice={status.notice} />
          {current ? (
            <CurrentOrganisation current={current} orgs={orgs} setPicked={setPicked} status={status} reload={reload} />
          ) : (
            <p class="muted">No organisations yet.</p>
          )}
        </Section>
        <div id="org-detail">
          {current ? (
            <OrgDetail key={current.id} orgId={current.id} target={current.id === target.org ? target.policy : null} />
          ) : null}
        </div>
      </Loaded>
      <EffectiveAgentPolicySection />
    </Page>
  );
}

interface CurrentProps {
  current: Organisation;
  orgs: Organisation[];
  setPicked(id: number | null): void;
  status: Actions;
  reload(): Promise<void>;
}

/** The chosen organisation: pick another, rename it, delete it. */
function CurrentOrganisation({ current, orgs, setPicked, status, reload }: CurrentProps) {
  const [rename, setRename] = useState<{ org: number; text: string } | null>(null);
  const renameText = rename && rename.org === current.id ? rename.text : current.name;
  const doRename = (o: Organisation) =>
    status.run('rename', async () => {
      const r = await api<Organisation>('PATCH', `/api/identity/organisations/${o.id}`, { name: renameText.trim() });
      setRename(null);
      await reload();
      status.ok(`Renamed to ${r.name}.`);
    });
  const remove = (o: Organisation) =>
    status.run('delete', async () => {
      if (
        !confirm(
          `Delete organisation ${o.name}? Its teams and agent policies are deleted too, and its members lose those policies.`,
        )
      )
        return;
      await api('DELETE', `/api/identity/organisations/${o.id}`);
      setPicked(null);
      await reload();
      status.ok(`Organisation ${o.name} deleted.`);
    });
  return (
    <>
      <Field id="org-pick" label="Organisation">
        <Select
          id="org-pick"
          value={String(current.id)}
          onChange={(v) => setPicked(Number(v))}
          options={orgs.map((o) => [String(o.id), o.name])}
        />
      </Field>
      <Form class="row" id="org-rename-form" onSubmit={() => doRename(current)}>
        <Field id="org-rename" label="Rename the organisation">
          <input
            type="text"
            id="org-rename"
            required
            maxLength={100}
            value={renameText}
            onInput={(e) => setRename({ org: current.id, text: e.currentTarget.value })}
          />
        </Field>
        <Submit id="org-rename-save" cls="secondary" text="Rename" disabled={status.busy === 'rename'} />
      </Form>
      <div class="actions">
        <button
          type="button"
          class="danger"
          id="org-delete"
          disabled={status.busy === 'delete'}
          onClick={() => void remove(current)}
        >
          Delete organisation
        </button>
      </div>
    </>
  );
}

/** Teams and agent policies, read together: a team change shows at once in the policies' team list. */
function OrgDetail({ orgId, target }: { orgId: number; target: number | null }) {
  const [data, failed, reload] = useLoad(async () => {
    const [teams, groups, policies, catalog] = await Promise.all([
      api<TeamList>('GET', `/api/identity/organisations/${orgId}/teams`),
      api<ExternalGroupList>('GET', '/api/identity/external-groups'),
      api<AgentPolicyList>('GET', `/api/identity/organisations/${orgId}/agent-policies`),
      api<AgentCatalogView>('GET', '/api/identity/agent-catalog'),
    ]);
    return { teams: teams.teams, groups: groups.groups, policies: policies.policies, catalog };
  }, [orgId]);
  if (failed) return <ErrorBox error={failed} />;
  if (!data) return <Loading />;
  return (
    <>
      <TeamsSection orgId={orgId} teams={data.teams} groups={data.groups} changed={reload} />
      <AgentPoliciesSection
        orgId={orgId}
        teams={data.teams}
        policies={data.policies}
        catalog={data.catalog}
        target={target}
        changed={reload}
      />
    </>
  );
}

function EffectiveAgentPolicySection() {
  const status = useActions();
  const who = useUserPicker('eap-user', { required: true });
  const [answer, setAnswer] = useState<EffectiveAgentPolicyResponse | null>(null);
  const show = () => {
    // A new query: the last answer does not belong to it, also when it fails.
    setAnswer(null);
    return status.run('show', async () => {
      setAnswer(
        await api<EffectiveAgentPolicyResponse>('GET', `/api/identity/agent-policy?user_id=${await who.resolve()}`),
      );
    });
  };
  return (
    <Section title="Effective agent policy for a user">
      <UserQuery id="eap" picker={who} button="Show" status={status} show={show}>
        {answer ? <EffectivePolicy answer={answer} /> : null}
      </UserQuery>
    </Section>
  );
}

/** A user's effective policy: tools, models, the mail rules in force and the policies it comes from, by name (links). */
function EffectivePolicy({ answer }: { answer: EffectiveAgentPolicyResponse }) {
  const p = answer.policy;
  const m = answer.mail;
  return (
    <>
      <ul>
        <li>Tools: {listText(p.tools)}</li>
        <li>Models: {listText(p.models)}</li>
        <li>Denied: {[...p.denied_tools, ...p.denied_models].join(', ') || 'none'}</li>
        <li id="eap-from">
          {answer.policies.length ? (
            <>
              From {answer.policies.length === 1 ? 'the policy' : 'the policies'}{' '}
              {answer.policies.map((x, i) => (
                <span key={x.id}>
                  {i ? ', ' : ''}
                  <a href={`#/admin/organisations/${x.organisation_id}/policy/${x.id}`}>{x.name}</a>{' '}
                  <span class="muted">({x.organisation_name})</span>
                </span>
              ))}
            </>
          ) : (
            'No policy applies: everything allowed.'
          )}
        </li>
      </ul>
      <h3>Sending mail</h3>
      <MailRules
        id="eap-mail"
        allow={m.allow_domains}
        block={m.block_domains}
        other={m.other}
        maxRecipients={m.max_recipients}
        maxPerHour={m.max_per_hour}
      />
      <p class="muted small">
        The server's send policy combined with every policy above; a held message waits {m.approval_timeout_s} s for the
        user's answer.
      </p>
    </>
  );
}
