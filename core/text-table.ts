/** Rows as a plain-text table for a terminal: columns padded to their widest cell, two spaces apart, no trailing blanks. */
export function textTable(rows: string[][]): string {
  const w = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => c.padEnd(w[i]))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
