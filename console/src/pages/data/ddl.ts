/**
 * The DDL that the Data pages show and then send through run_sql, as Hasura's console does:
 * tables created, renamed and dropped, columns added, altered and dropped. Pure functions, so what
 * the page shows is exactly what it sends. Identifiers are quoted; a column type must look like a
 * type name (it is spliced in as it is); a default is an SQL expression the user wrote (shown
 * before it runs, as it runs).
 */

export interface ColumnSpec {
  name: string;
  type: string;
  nullable: boolean;
  unique: boolean;
  /** An SQL expression, or '' for none. */
  default: string;
}

export interface ForeignKeySpec {
  columns: string[];
  refSchema: string;
  refTable: string;
  refColumns: string[];
  onUpdate: Action;
  onDelete: Action;
}

export const FK_ACTIONS = ['restrict', 'cascade', 'set null', 'set default', 'no action'] as const;
export type Action = (typeof FK_ACTIONS)[number];

export interface TableSpec {
  schema: string;
  name: string;
  columns: ColumnSpec[];
  primaryKey: string[];
  foreignKeys: ForeignKeySpec[];
  comment: string;
}

/** The types Hasura's console offers first; any other type name may be typed. */
export const COMMON_TYPES = [
  'integer',
  'serial',
  'bigint',
  'bigserial',
  'uuid',
  'text',
  'boolean',
  'numeric',
  'real',
  'double precision',
  'date',
  'time with time zone',
  'timestamp with time zone',
  'jsonb',
  'json',
  'varchar(255)',
  'text[]',
];

export const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;
export const qualified = (schema: string, name: string): string => `${ident(schema)}.${ident(name)}`;
const lit = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** A type name: words (`double precision`), an optional schema, a modifier `(n)`/`(p, s)`, `[]`s. */
const TYPE = /^(?:[A-Za-z_][A-Za-z0-9_$]*\.)?[A-Za-z_][A-Za-z0-9_$]*(?: [A-Za-z_][A-Za-z0-9_$]*)*(?:\(\s*\d+\s*(?:,\s*\d+\s*)?\))?(?:\[\d*\])*$/;

export function typeSql(t: string): string {
  const s = t.trim().replace(/\s+/g, ' ');
  if (!TYPE.test(s)) throw new Error(`"${t}" is not a column type (expected a name such as integer, text, varchar(40), numeric(10, 2), text[])`);
  return s;
}

function need(name: string, what: string): string {
  if (name.trim() === '') throw new Error(`${what} needs a name`);
  return name.trim();
}

/** A column's definition in CREATE TABLE or ADD COLUMN. */
export function columnSql(c: ColumnSpec): string {
  let s = `${ident(need(c.name, 'every column'))} ${typeSql(c.type)}`;
  if (!c.nullable) s += ' NOT NULL';
  if (c.unique) s += ' UNIQUE';
  if (c.default.trim() !== '') s += ` DEFAULT ${c.default.trim()}`;
  return s;
}

function foreignKeySql(fk: ForeignKeySpec): string {
  if (fk.columns.length === 0 || fk.columns.length !== fk.refColumns.length) throw new Error('a foreign key maps as many columns as it references, at least one');
  return (
    `FOREIGN KEY (${fk.columns.map(ident).join(', ')}) REFERENCES ${qualified(fk.refSchema, need(fk.refTable, 'a referenced table'))} (${fk.refColumns.map(ident).join(', ')})` +
    ` ON UPDATE ${fk.onUpdate} ON DELETE ${fk.onDelete}`
  );
}

export function createTableSql(t: TableSpec): string {
  const name = need(t.name, 'the table');
  if (t.columns.length === 0) throw new Error('a table needs at least one column');
  const names = t.columns.map((c) => c.name.trim());
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new Error(`two columns are named "${dup}"`);
  for (const k of t.primaryKey) if (!names.includes(k)) throw new Error(`the primary key names "${k}", which is no column`);
  const parts = t.columns.map(columnSql);
  if (t.primaryKey.length) parts.push(`PRIMARY KEY (${t.primaryKey.map(ident).join(', ')})`);
  for (const fk of t.foreignKeys) parts.push(foreignKeySql(fk));
  let sql = `CREATE TABLE ${qualified(t.schema, name)} (\n  ${parts.join(',\n  ')}\n);`;
  if (t.comment.trim()) sql += `\nCOMMENT ON TABLE ${qualified(t.schema, name)} IS ${lit(t.comment.trim())};`;
  return sql;
}

export function addColumnSql(schema: string, table: string, c: ColumnSpec): string {
  return `ALTER TABLE ${qualified(schema, table)} ADD COLUMN ${columnSql(c)};`;
}

/** The statements that turn column `before` into `after` (nothing when they are equal). A rename
 * comes last, so the other statements name the column as it was. */
export function alterColumnSql(schema: string, table: string, before: ColumnSpec, after: ColumnSpec, uniqueConstraint?: string): string {
  const t = qualified(schema, table);
  const col = ident(before.name);
  const out: string[] = [];
  if (typeSql(after.type) !== typeSql(before.type)) out.push(`ALTER TABLE ${t} ALTER COLUMN ${col} TYPE ${typeSql(after.type)} USING ${col}::${typeSql(after.type)};`);
  if (after.nullable !== before.nullable) out.push(`ALTER TABLE ${t} ALTER COLUMN ${col} ${after.nullable ? 'DROP' : 'SET'} NOT NULL;`);
  if (after.default.trim() !== before.default.trim())
    out.push(after.default.trim() === '' ? `ALTER TABLE ${t} ALTER COLUMN ${col} DROP DEFAULT;` : `ALTER TABLE ${t} ALTER COLUMN ${col} SET DEFAULT ${after.default.trim()};`);
  if (after.unique !== before.unique) {
    // Dropped by its name; added under the name PostgreSQL gives `UNIQUE` on one column.
    const constraint = ident(uniqueConstraint ?? `${table}_${before.name}_key`);
    out.push(after.unique ? `ALTER TABLE ${t} ADD CONSTRAINT ${constraint} UNIQUE (${col});` : `ALTER TABLE ${t} DROP CONSTRAINT ${constraint};`);
  }
  const to = need(after.name, 'the column');
  if (to !== before.name) out.push(`ALTER TABLE ${t} RENAME COLUMN ${col} TO ${ident(to)};`);
  return out.join('\n');
}

export function dropColumnSql(schema: string, table: string, column: string): string {
  return `ALTER TABLE ${qualified(schema, table)} DROP COLUMN ${ident(column)};`;
}

export function renameTableSql(schema: string, table: string, to: string): string {
  return `ALTER TABLE ${qualified(schema, table)} RENAME TO ${ident(need(to, 'the table'))};`;
}

export function dropTableSql(schema: string, table: string, kind: 'table' | 'view' = 'table'): string {
  return `DROP ${kind === 'view' ? 'VIEW' : 'TABLE'} ${qualified(schema, table)};`;
}
