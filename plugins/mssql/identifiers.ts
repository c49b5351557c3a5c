/** T-SQL identifiers in brackets (`]` doubled), and N'...' string literals (`'` doubled). */
export const quoteIdent = (name: string): string => `[${name.replace(/\]/g, ']]')}]`;
export const nlit = (s: string): string => `N'${s.replace(/'/g, "''")}'`;
