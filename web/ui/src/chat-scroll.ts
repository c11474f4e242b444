// The chat transcript follows the newest content unless the reader scrolled up (docs/chat.md).
import type { RefObject } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';

export interface StickyScroll {
  transcript: RefObject<HTMLDivElement>;
  /** Whether the newest content is followed (a send or a new chat follows again). */
  stick: { current: boolean };
  atBottom: boolean;
  onScroll(): void;
  onWheel(ev: WheelEvent): void;
  onKey(ev: KeyboardEvent): void;
  /** The reader moves up (wheel, keys, touch): stop following at once, before any scroll event. */
  leaveBottom(): void;
  /** "Jump to latest": follow again, and back to the message box. */
  jump(): void;
}

/**
 * Keep the newest content in view unless the reader scrolled up: when `shown` changes, and when
 * what is shown grows or the transcript shrinks after it rendered (a font or chart image that
 * loads late, a phone's viewport settling), which no render announces.
 */
export function useStickyScroll(shown: unknown, input: RefObject<HTMLTextAreaElement>): StickyScroll {
  const transcript = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const [atBottom, setAtBottom] = useState(true);
  const grown = useRef<ResizeObserver | null>(null);
  useLayoutEffect(() => {
    const el = transcript.current;
    if (!el) return;
    if (stick.current) el.scrollTop = el.scrollHeight;
    if (typeof ResizeObserver === 'undefined') return;
    grown.current ??= new ResizeObserver(() => {
      if (stick.current) el.scrollTop = el.scrollHeight;
    });
    // What is shown now, not turns that left (another chat opened): observed anew each time.
    grown.current.disconnect();
    for (const c of [el, ...Array.from(el.children)]) grown.current.observe(c);
  }, [shown]);
  useEffect(() => () => grown.current?.disconnect(), []);

  const lastTop = useRef(0);
  const onScroll = () => {
    const el = transcript.current;
    if (!el) return;
    const bottom = el.scrollHeight - el.scrollTop - el.clientHeight < 48;
    // Reaching the bottom follows again; only a move up leaves it (a scrollbar drag has no other
    // sign than this). Content that grew below since this event was queued is no move: the
    // newest stays pinned, and the observer above scrolls to it.
    if (bottom) stick.current = true;
    else if (el.scrollTop < lastTop.current) stick.current = false;
    lastTop.current = el.scrollTop;
    setAtBottom(bottom || stick.current);
  };
  const leaveBottom = () => {
    stick.current = false;
    setAtBottom(false);
  };
  const jump = () => {
    const el = transcript.current;
    if (!el) return;
    stick.current = true;
    el.scrollTop = el.scrollHeight;
    setAtBottom(true);
    input.current?.focus();
  };
  const onWheel = (ev: WheelEvent) => {
    if (ev.deltaY < 0) leaveBottom();
  };
  const onKey = (ev: KeyboardEvent) => {
    if (['PageUp', 'ArrowUp', 'Home'].includes(ev.key)) leaveBottom();
  };
  return { transcript, stick, atBottom, onScroll, onWheel, onKey, leaveBottom, jump };
}
