// Errors as people read them: a sentence first, the code (and the server's own words) only inside
// a "Details" disclosure. Used by the chat page and the admin pages (docs/chat.md, "Errors people
// see"); test/browser/error-text.test.ts checks no page shows a bare ERR_ code outside <details>.
import type { ComponentChildren } from 'preact';
import { ApiError } from './api.js';

/** What a person is told for a code; a code not listed shows the server's message when it is a sentence. */
const SENTENCES: Record<string, string> = {
  // A turn's end (done.error)
  ERR_MODEL_HTTP: 'The AI model answered with an error, so this answer stopped. Try again in a moment.',
  ERR_MODEL_AUTH: 'The AI model refused this server’s credentials. Ask your administrator to check the model settings.',
  ERR_MODEL_STREAM: 'The AI model’s answer broke off. Try again.',
  ERR_MODEL_SDK: 'The AI model cannot be used on this server right now. Ask your administrator.',
  ERR_MODEL_TIMEOUT: 'The AI model stopped responding, so this answer was ended. Try again in a moment.',
  ERR_MODEL_UNREACHABLE: 'The AI model could not be reached, even after retrying. Try again in a few minutes.',
  ERR_TURN_TIMEOUT: 'This answer took too long and was stopped.',
  ERR_CHAT_MODEL_NOT_FOUND: 'That model is no longer on offer. Pick another one.',
  ERR_CHAT_MODEL_EXISTS: 'A model with that id exists already. Choose another id.',
  ERR_CHAT_MODEL_DEFAULT: 'The default model cannot be disabled or deleted; edit it instead.',
  ERR_POLICY_MODEL_DENIED:
    'Your organisation’s agent policy does not allow this model. Pick another one or ask your administrator.',
  ERR_AGENT_INTERNAL: 'The assistant failed unexpectedly. Try again.',
  ERR_AGENT_CONFIG: 'The assistant is not set up correctly. Ask your administrator.',
  ERR_SANDBOX_LOST: 'The assistant’s workspace stopped during this answer. Your next message starts a fresh one.',
  ERR_SANDBOX_START: 'The assistant could not be started. Try again in a moment.',
  ERR_SANDBOX_FAILED: 'The assistant could not run this answer. Try again.',
  ERR_SANDBOX_INTERNAL: 'The assistant could not run this answer. Try again.',
  ERR_SANDBOX_CHILD_EXITED: 'The assistant stopped during this answer and has been restarted. Try again.',
  ERR_SANDBOX_WORKSPACE: 'Your files could not be opened for this chat. Try again in a moment.',
  ERR_CHAT_TURN_LOST: 'The server restarted while this answer was running, so it is incomplete.',
  ERR_SESSION_BUSY: 'An answer is still running in this chat.',
  ERR_SESSION_CAPACITY: 'The server is busy with other chats. Try again in a minute.',
  ERR_SESSION_UNAVAILABLE: 'The server is restarting. Try again in a moment.',
  ERR_CHAT_UNAVAILABLE: 'Chat is not available on this server.',
  ERR_CHAT_SESSION_NOT_FOUND: 'This chat no longer exists.',
  ERR_CHAT_TURN_NOT_FOUND: 'This answer no longer exists.',
  ERR_CHAT_REPLACE_NOT_LAST: 'Only the last message can be edited or regenerated.',
  ERR_NETWORK:
    'The connection to the server dropped, so this answer may be incomplete. Reload the chat to see what was saved.',
  ERR_HTTP: 'The server could not be reached properly. Try again.',
  // Tools and mail (tool_end errors)
  ERR_TOOL_TIMEOUT: 'The tool did not answer in time and was stopped.',
  ERR_TOOL_FAILED: 'The tool failed.',
  ERR_TOOL_FORBIDDEN: 'The tool was not allowed to do this.',
  ERR_PYTHON_EXCEPTION: 'The Python code raised an error; its traceback is shown with the code.',
  ERR_TOOL_NOT_CONNECTED: 'Connect your workspace account (Account page) to use this tool.',
  ERR_MAIL_DENIED: 'The e-mail was not sent: you declined it.',
  ERR_MAIL_BLOCKED: 'The e-mail was not sent: the send policy blocks it.',
  ERR_MAIL_APPROVAL_TIMEOUT: 'The e-mail was not sent: nobody approved it in time.',
  ERR_MAIL_RATE_LIMITED: 'The e-mail was not sent: you have sent as many messages as allowed for now.',
  ERR_APPROVAL_DECIDED: 'This e-mail was already decided.',
  ERR_APPROVAL_NOT_FOUND: 'This approval request no longer exists.',
  // Sign-in and requests
  ERR_AUTH_REQUIRED: 'You are signed out. Sign in again.',
  ERR_AUTH_CSRF: 'The page was out of date. Try again.',
  ERR_AUTH_FORBIDDEN: 'You are not allowed to do this.',
  ERR_AUTH_INVALID: 'The username or password is wrong.',
  ERR_VALIDATION: 'Some of what you entered is not valid.',
  ERR_NOT_FOUND: 'This was not found.',
  ERR_DB_UNAVAILABLE: 'The database is not answering. Try again in a moment.',
  ERR_INTERNAL: 'Something went wrong on the server. Try again.',
  // Admin pages
  ERR_DATA_ROLE_EXISTS: 'A data role with this name already exists.',
};

const CODE_RE = /\s*\(?\bERR_[A-Z0-9_]+\b\)?:?/g;

/** The server's message as a sentence (codes taken out, capitalised, a full stop), or null when it is none. */
export function asSentence(message: string | undefined): string | null {
  const m = (message ?? '').replace(CODE_RE, '').replace(/\s+/g, ' ').trim();
  if (m.split(' ').length < 3 || !/[a-z]/i.test(m)) return null;
  const s = m[0].toUpperCase() + m.slice(1);
  return /[.!?…]$/.test(s) ? s : `${s}.`;
}

/** The sentence for a code and message. */
export function sentenceFor(code: string | undefined, message?: string): string {
  return (code && SENTENCES[code]) || asSentence(message) || 'Something went wrong. Try again.';
}

/** A coded error as a person sees it; `extra` goes into the details too. */
export function ErrorText({ code, message, extra }: { code?: string; message?: string; extra?: ComponentChildren }) {
  const sentence = sentenceFor(code, message);
  const more = message && asSentence(message) !== sentence ? message : undefined;
  return (
    <>
      <span class="error-sentence">{sentence}</span>{' '}
      {(code || more || extra) && (
        <details class="error-details">
          <summary>Details</summary>
          {code && <code class="errcode">{code}</code>}
          {more && <span> {more}</span>}
          {extra}
        </details>
      )}
    </>
  );
}

/** What a banner shows: plain text, or a coded error. */
export type Shown = string | { code: string; message: string };

/** An error as something to show: an ApiError keeps its code for the details. */
export function shownOf(e: unknown, fallback = 'Something went wrong. Try again.'): Shown {
  if (e instanceof ApiError) return { code: e.code, message: e.message };
  return e instanceof Error && asSentence(e.message) ? asSentence(e.message)! : fallback;
}

export function ShownText({ s }: { s: Shown }) {
  return typeof s === 'string' ? <>{s}</> : <ErrorText code={s.code} message={s.message} />;
}

/**
 * A tool's error string ("ERR_TOOL_TIMEOUT: the tool … did not answer", "not allowed … (ERR_MAIL_DENIED)
 * (ERR_TOOL_FORBIDDEN)", "cancelled") as a sentence; the codes it names, first one wins.
 */
export function toolErrorSentence(error: string): string {
  const codes = error.match(/\bERR_[A-Z0-9_]+\b/g) ?? [];
  for (const c of codes) if (SENTENCES[c]) return SENTENCES[c];
  return asSentence(error) ?? 'The tool failed.';
}
