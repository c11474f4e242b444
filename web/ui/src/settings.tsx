// The settings page (#/settings; docs/chat.md "Settings"): the colour scheme (system, light or dark:
// this browser's, in localStorage 'airlock-theme', applied before the first paint by theme.ts), the
// model a new chat starts with (GET/PATCH /api/settings) and the password (POST
// /api/settings/password; an account that signs in by single sign-on only has none, and is told so).
import { useState } from 'preact/hooks';
import type { ChatModelList } from '../../chat-api.js';
import type { SettingsView } from '../../admin-api.js';
import { api } from './api.js';
import { Field, Loading, Section, Select, Status, useActions, useLoad } from './admin/common.js';
import { Form, Loaded, Page, Submit } from './admin/forms.js';
import { ConnectorsSection } from './connectors.js';

export type ThemeChoice = 'system' | 'light' | 'dark';
const THEME_KEY = 'airlock-theme';

export function savedTheme(): ThemeChoice {
  try {
    const v = localStorage.getItem(THEME_KEY);
    return v === 'light' || v === 'dark' ? v : 'system';
  } catch {
    return 'system';
  }
}

/** Apply and remember a choice ('system': no data-theme, the media query decides). */
export function applyTheme(choice: ThemeChoice): void {
  if (choice === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = choice;
  try {
    localStorage.setItem(THEME_KEY, choice);
  } catch {
    // Storage blocked: the choice lasts for this page only.
  }
  window.dispatchEvent(new Event('airlock-theme')); // the header's switch follows
}

function ThemeSection() {
  const [choice, setChoice] = useState<ThemeChoice>(savedTheme());
  const pick = (c: ThemeChoice) => {
    applyTheme(c);
    setChoice(c);
  };
  const options: [ThemeChoice, string][] = [
    ['system', 'Same as the system'],
    ['light', 'Light'],
    ['dark', 'Dark'],
  ];
  return (
    <Section title="Appearance">
      <fieldset id="theme-choice">
        <legend>Colour scheme (this browser)</legend>
        {options.map(([v, label]) => (
          <div class="check" key={v}>
            <input
              type="radio"
              name="theme"
              id={`theme-${v}`}
              value={v}
              checked={choice === v}
              onChange={() => pick(v)}
            />
            <label for={`theme-${v}`}>{label}</label>
          </div>
        ))}
      </fieldset>
    </Section>
  );
}

function ModelSection({ settings, onSaved }: { settings: SettingsView; onSaved(s: SettingsView): void }) {
  const status = useActions();
  const [list] = useLoad(() => api<ChatModelList>('GET', '/api/chat/models'));
  if (!list) return <Loading />;
  const options: [string, string][] = [
    ['', 'The server’s default'],
    ...list.models.map((m): [string, string] => [m.id, m.label]),
  ];
  const save = (v: string) =>
    status.run('model', async () => {
      onSaved(await api<SettingsView>('PATCH', '/api/settings', { default_model_id: v || null }));
      status.ok('Saved: new chats start with this model.');
    });
  return (
    <Section title="New chats">
      <Field id="settings-model" label="Model for new chats">
        <Select
          id="settings-model"
          options={options}
          value={settings.default_model_id ?? ''}
          onChange={(v) => void save(v)}
        />
      </Field>
      <Status id="settings-model-status" notice={status.notice} />
    </Section>
  );
}

function PasswordSection({ settings }: { settings: SettingsView }) {
  const status = useActions();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [problem, setProblem] = useState('');
  if (!settings.has_password) {
    return (
      <Section title="Password">
        <p id="settings-no-password">
          You sign in with your organisation’s single sign-on, so there is no password to change here. Change it with
          your identity provider.
        </p>
      </Section>
    );
  }
  const submit = () => {
    const p =
      next.length < settings.password_min
        ? `The new password needs at least ${settings.password_min} characters.`
        : next !== again
          ? 'The two new passwords differ.'
          : '';
    setProblem(p);
    if (p) return;
    void status.run('password', async () => {
      const r = await api<{ sessions_ended: number }>('POST', '/api/settings/password', {
        current_password: current,
        new_password: next,
      });
      setCurrent('');
      setNext('');
      setAgain('');
      status.ok(
        `Password changed. ${r.sessions_ended ? `You were signed out on ${r.sessions_ended} other ${r.sessions_ended === 1 ? 'device or browser' : 'devices or browsers'}.` : 'You stay signed in here.'}`,
      );
    });
  };
  return (
    <Section title="Password">
      <Form id="password-form" onSubmit={submit}>
        <Field id="pw-current" label="Current password">
          <input
            id="pw-current"
            type="password"
            autocomplete="current-password"
            required
            value={current}
            onInput={(e) => setCurrent(e.currentTarget.value)}
          />
        </Field>
        <Field
          id="pw-new"
          label="New password"
          hint={`At least ${settings.password_min} characters. Your other sign-ins end; this one stays.`}
        >
          <input
            id="pw-new"
            type="password"
            autocomplete="new-password"
            required
            aria-describedby="pw-new-hint"
            value={next}
            onInput={(e) => setNext(e.currentTarget.value)}
          />
        </Field>
        <Field id="pw-again" label="New password again">
          <input
            id="pw-again"
            type="password"
            autocomplete="new-password"
            required
            value={again}
            onInput={(e) => setAgain(e.currentTarget.value)}
          />
        </Field>
        <div role="alert" class="error" id="pw-problem">
          {problem}
        </div>
        <Submit id="pw-save" text="Change password" disabled={status.busy === 'password'} />
      </Form>
      <Status id="pw-status" notice={status.notice} />
    </Section>
  );
}

export function SettingsPage() {
  const [settings, failed, , setSettings] = useLoad(() => api<SettingsView>('GET', '/api/settings'));
  return (
    <Page
      cls="admin settings"
      title="Settings"
      intro="Your own settings: how Airlock looks, the model new chats start with, and your password."
    >
      <ThemeSection />
      <Loaded failed={failed} loading={!settings}>
        {settings && <ModelSection settings={settings} onSaved={setSettings} />}
        {settings && <PasswordSection settings={settings} />}
      </Loaded>
      <ConnectorsSection />
    </Page>
  );
}
