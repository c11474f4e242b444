// A failed action's problem, said at once (role="alert"): a banner, or a short inline line after
// the controls it is about. Nothing while there is none.
import { ShownText, type Shown } from './error-text.js';

export function ProblemAlert({ problem, inline }: { problem: Shown | null; inline?: boolean }) {
  if (!problem) return null;
  const text = <ShownText s={problem} />;
  return inline ? (
    <span class="error" role="alert">
      {text}
    </span>
  ) : (
    <div class="banner error" role="alert">
      {text}
    </div>
  );
}
