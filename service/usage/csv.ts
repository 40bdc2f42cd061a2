/** CSV as spreadsheets read it (RFC 4180), for the ledger and usage exports. */

/** A field with a comma, quote or line break is quoted, its quotes doubled; a leading = + - @ is defused for spreadsheets. */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A header line and one line per row, CRLF-terminated. */
export function csvOf<const C extends string>(
  columns: readonly C[],
  rows: readonly Record<C, string | number | null>[],
): string {
  const lines = [columns.join(','), ...rows.map((r) => columns.map((c) => csvField(r[c])).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}
