// Files the user attaches to a chat: the composer's "Attach file" button and the previews
// (a small table for CSV/XLSX, the picture for PNG/JPEG). The route: web/upload-routes.ts.
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import { sentFileBase, ShareToken } from './share-token.js';
import type { UploadAnswer, FilePreview as Preview } from '../../chat-api.js';
import { ApiError, csrf } from './api.js';

/** Rows and columns a preview shows (the route sends up to 20 rows). */
const SHOW_ROWS = 6;
const SHOW_COLUMNS = 6;

export const ACCEPT = '.csv,.xlsx,.png,.jpg,.jpeg,.pdf,.docx,.pptx,.txt,.md,.json';

function filesBase(sessionId: string | null): string {
  return sessionId ? `/api/chat/sessions/${encodeURIComponent(sessionId)}/files` : '/api/chat/files';
}

/** POST the file's bytes (its name in X-File-Name); the answer is the stored name and its preview. */
export async function uploadFile(sessionId: string | null, file: File, retried = false): Promise<UploadAnswer> {
  const res = await fetch(filesBase(sessionId), {
    method: 'POST',
    credentials: 'same-origin',
    headers: {
      'content-type': 'application/octet-stream',
      'x-file-name': encodeURIComponent(file.name),
      'x-csrf-token': await csrf(),
      accept: 'application/json',
    },
    body: file,
  });
  const body = (await res.json().catch(() => ({}))) as UploadAnswer & { error?: { code: string; message: string } };
  if (!res.ok) {
    const e = body.error ?? { code: 'ERR_HTTP', message: `HTTP ${res.status}` };
    if (e.code === 'ERR_AUTH_CSRF' && !retried) return uploadFile(sessionId, file, true);
    throw new ApiError(res.status, e.code, e.message);
  }
  return body;
}

/** The "Attach file" button: a real file input, labelled, that uploads at once. */
export function AttachButton(p: {
  sessionId: string | null;
  disabled?: boolean;
  onUploaded(a: UploadAnswer): void;
  onError(message: string): void;
}) {
  const input = useRef<HTMLInputElement>(null);
  const [uploading, setUploading] = useState(false);
  const pick = async (ev: Event) => {
    const el = ev.target as HTMLInputElement;
    const files = [...(el.files ?? [])];
    el.value = '';
    setUploading(true);
    try {
      for (const f of files) p.onUploaded(await uploadFile(p.sessionId, f));
    } catch (e) {
      p.onError(e instanceof ApiError ? `${e.message} (${e.code})` : String(e));
    } finally {
      setUploading(false);
    }
  };
  return (
    <>
      {/* Not in the page's tab order or accessibility tree: the button below opens it. */}
      <input
        ref={input}
        id="attach-input"
        type="file"
        accept={ACCEPT}
        multiple
        hidden
        aria-label="Files to attach"
        onChange={(e) => void pick(e)}
      />
      <button
        type="button"
        id="attach"
        class="secondary"
        disabled={p.disabled || uploading}
        onClick={() => input.current?.click()}
        title="Attach a table (CSV, XLSX), a picture (PNG, JPEG) or a document (PDF, DOCX, PPTX, TXT, Markdown, JSON); 10 MB at most"
      >
        {uploading ? 'Uploading…' : 'Attach file'}
      </button>
    </>
  );
}

const DOCUMENT_LABEL: Partial<Record<Preview['kind'], string>> = {
  pdf: 'PDF document',
  docx: 'Word document',
  pptx: 'PowerPoint slides',
};

/** One attached file: a table of its first rows, the start of a text, its picture, or what kind of document it is. */
export function FilePreview(p: { preview: Preview; sessionId: string | null; onRemove?: () => void }) {
  const { preview } = p;
  const share = useContext(ShareToken);
  const t = preview.table;
  return (
    <figure class="file-preview" data-file={preview.name}>
      <figcaption>
        <span class="file-name">{preview.name}</span>
        {t && (
          <span class="muted">
            {' '}
            · {t.sheet}
            {t.truncated || t.rows.length > SHOW_ROWS ? ` · first ${Math.min(SHOW_ROWS, t.rows.length)} rows` : ''}
          </span>
        )}
        {p.onRemove && (
          <button
            type="button"
            class="link small"
            aria-label={`Remove ${preview.name} from this message`}
            onClick={p.onRemove}
          >
            Remove
          </button>
        )}
      </figcaption>
      {t ? (
        <PreviewTable table={t} name={preview.name} />
      ) : preview.text ? (
        <PreviewText text={preview.text} name={preview.name} />
      ) : preview.kind === 'png' || preview.kind === 'jpeg' ? (
        <img
          src={`${share ? sentFileBase(share) : filesBase(p.sessionId)}/${encodeURIComponent(preview.name)}`}
          alt={`Uploaded picture ${preview.name}`}
          class="file-image"
        />
      ) : (
        <p class="muted small-text">
          {DOCUMENT_LABEL[preview.kind] ?? 'Document'}: the agent reads it with read_document.
        </p>
      )}
    </figure>
  );
}

/** A table's first rows (the first row as column heads) and what reading it changed. */
export function PreviewTable({ table: t, name }: { table: NonNullable<Preview['table']>; name: string }) {
  return (
    <div class="file-table-wrap" tabIndex={0} role="region" aria-label={`First rows of ${name}`}>
      <table class="file-table">
        <tbody>
          {t.rows.slice(0, SHOW_ROWS).map((r, i) => (
            <tr key={i}>
              {r.slice(0, SHOW_COLUMNS).map((c, j) =>
                i === 0 ? (
                  <th key={j} scope="col">
                    {c}
                  </th>
                ) : (
                  <td key={j}>{c}</td>
                ),
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {t.notes.map((n, i) => (
        <p key={i} class="muted small-text">
          {n}
        </p>
      ))}
    </div>
  );
}

/** The start of a text file (JSON, TXT, Markdown), as text: never rendered as markup. */
export function PreviewText({ text: x, name }: { text: NonNullable<Preview['text']>; name: string }) {
  return (
    <div class="file-text-wrap" tabIndex={0} role="region" aria-label={`Start of ${name}`}>
      <pre class="file-text">{x.text}</pre>
      {x.truncated && <p class="muted small-text">The first 4 KiB; download the file for the rest.</p>}
    </div>
  );
}

/** The line added to a message that names its attached files (the agent finds them by name in /workspace/uploads). */
export function attachedLine(names: readonly string[]): string {
  return names.length ? `\n\nAttached: ${names.map((n) => `uploads/${n}`).join(', ')}` : '';
}

const ATTACHED_RE = /\n\nAttached: ((?:uploads\/[A-Za-z0-9._-]+(?:, )?)+)$/;

/** The files a sent message names on its "Attached:" line. */
export function attachedIn(prompt: string): string[] {
  const m = ATTACHED_RE.exec(prompt);
  return m ? m[1]!.split(', ').map((s) => s.replace(/^uploads\//, '')) : [];
}

/** Previews of the files a sent message names (fetched from the owner's workspace; a file gone shows its name only). */
export function SentFiles(p: { prompt: string }) {
  const names = attachedIn(p.prompt);
  const [previews, setPreviews] = useState<Record<string, Preview | null>>({});
  const share = useContext(ShareToken);
  useEffect(() => {
    for (const n of names) {
      if (n in previews) continue;
      fetch(`${sentFileBase(share)}/${encodeURIComponent(n)}/preview`, { credentials: 'same-origin' })
        .then((r) => (r.ok ? (r.json() as Promise<Preview>) : null))
        .then(
          (pv) => setPreviews((o) => ({ ...o, [n]: pv })),
          () => setPreviews((o) => ({ ...o, [n]: null })),
        );
    }
  }, [p.prompt]);
  if (!names.length) return null;
  return (
    <div class="attached sent" aria-label="Files sent with this message">
      {names.map((n) => {
        const pv = previews[n];
        return pv ? (
          <FilePreview key={n} preview={pv} sessionId={null} />
        ) : (
          <span key={n} class="file-name muted">
            {n}
          </span>
        );
      })}
    </div>
  );
}
