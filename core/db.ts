/** Current time as the ISO text every table stores. */
export function nowIso(date = new Date()): string {
  return date.toISOString();
}
