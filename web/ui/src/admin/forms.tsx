// The repeated shapes of the admin pages, written once: a page with its title and load state, a
// form that submits without reloading, its submit button, a row's buttons and a user-lookup form.
import type { ButtonHTMLAttributes, ComponentChildren, FormHTMLAttributes } from 'preact';
import { Clip, Field, LoadFailed, Loading, PageTitle, Status, type Actions, type UserPicker } from './common.js';

/** An admin page: a div of class `cls` with the title and intro, then `children`. */
export function Page({
  cls,
  title,
  intro,
  children,
}: {
  cls: string;
  title: string;
  intro?: string;
  children?: ComponentChildren;
}) {
  return (
    <div class={cls}>
      <PageTitle title={title} intro={intro} />
      {children}
    </div>
  );
}

/** A load's state: its error (`unavailable`: see LoadFailed), "Loading…" while `loading`, then `children`. */
export function Loaded({
  failed,
  loading,
  unavailable,
  children,
}: {
  failed: unknown;
  loading: boolean;
  unavailable?: string;
  children?: ComponentChildren;
}) {
  if (failed) return <LoadFailed error={failed} unavailable={unavailable} />;
  return loading ? <Loading /> : <>{children}</>;
}

/** A page whose data has not come: its title and intro, then the error or "Loading…". */
export function PageLoading({
  failed,
  unavailable,
  ...page
}: {
  cls: string;
  title: string;
  intro?: string;
  failed: unknown;
  unavailable?: string;
}) {
  return (
    <Page {...page}>
      <Loaded failed={failed} loading unavailable={unavailable} />
    </Page>
  );
}

/** A form whose submit runs `onSubmit` in the page (no navigation). */
export function Form({
  onSubmit,
  children,
  ...rest
}: { onSubmit(): unknown; children?: ComponentChildren } & Omit<FormHTMLAttributes<HTMLFormElement>, 'onSubmit'>) {
  const submit = (e: Event) => {
    e.preventDefault();
    void onSubmit();
  };
  return (
    <form {...rest} onSubmit={submit}>
      {children}
    </form>
  );
}

/** A form's submit button (`disabled` while its action runs). */
export function Submit({ id, text, disabled, cls }: { id?: string; text: string; disabled: boolean; cls?: string }) {
  return (
    <button type="submit" id={id} class={cls} disabled={disabled}>
      {text}
    </button>
  );
}

/** A form's submit button and, while the form edits a row, Cancel beside it (`onCancel`). */
export function SubmitOrCancel({
  id,
  text,
  disabled,
  editing,
  onCancel,
}: {
  id: string;
  text: string;
  disabled: boolean;
  editing: boolean;
  onCancel(): void;
}) {
  return (
    <div class="row compact">
      <Submit id={id} text={text} disabled={disabled} />
      {editing ? (
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      ) : null}
    </div>
  );
}

/** A button in a table row: `label` is its accessible name (it says which row), `text` what it shows. */
export function RowButton({
  text,
  label,
  cls = 'secondary',
  onClick,
  ...rest
}: { text: string; label: string; cls?: string; onClick(): void } & Omit<
  ButtonHTMLAttributes<HTMLButtonElement>,
  'onClick' | 'label'
>) {
  return (
    <button {...rest} type="button" class={cls} aria-label={label} onClick={onClick}>
      {text}
    </button>
  );
}

/** A row's buttons, side by side. */
export const RowActions = ({ children }: { children?: ComponentChildren }) => <div class="row compact">{children}</div>;

/** A "User" field and its button (ids `<id>-form`, `<id>-user`, `<id>-show`), its status area (`<id>-status`) and the answer (`<id>-out`). */
export function UserQuery({
  id,
  picker,
  button,
  status,
  show,
  children,
}: {
  id: string;
  picker: UserPicker;
  button: string;
  status: Actions;
  show(): unknown;
  children?: ComponentChildren;
}) {
  return (
    <>
      <Form id={`${id}-form`} class="row" onSubmit={show}>
        <Field id={`${id}-user`} label="User">
          {picker.field}
        </Field>
        <Submit id={`${id}-show`} text={button} disabled={status.busy === 'show'} />
      </Form>
      <Status id={`${id}-status`} notice={status.notice} />
      <div id={`${id}-out`} aria-live="polite">
        {children}
      </div>
    </>
  );
}

/** A table cell naming a thing: its name, a badge and a warning badge when given, and a muted line under it. */
export function NameCell({
  name,
  badge,
  warning,
  children,
}: {
  name: string;
  badge?: string | false;
  warning?: string | false;
  children?: ComponentChildren;
}) {
  return (
    <div>
      <Clip text={name} cls="name" /> {badge ? <span class="badge">{badge}</span> : null}{' '}
      {warning ? <span class="badge warning">{warning}</span> : null}
      <div class="muted small">{children}</div>
    </div>
  );
}
