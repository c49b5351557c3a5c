/** PostgreSQL's quoting of an identifier: in double quotes, a double quote doubled. The compiler
 * and the dialect both quote, so it lives apart from either (no import circle). */
export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
