/**
 * Where a flow that leaves the page (an OAuth redirect) brings the user back: the chat open now,
 * else the start page. Only a chat link of the page's own shape is kept (never an outside URL).
 */
export function returnHere(): string {
  return /^#\/chat\/[A-Za-z0-9-]{1,64}$/.test(location.hash) ? `/${location.hash}` : '/';
}
