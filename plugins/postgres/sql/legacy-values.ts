/**
 * How PostgreSQL's legacy writes (`/v1/query` insert, update) bind a client's value
 * (Dialect.legacyValue): as Hasura's PostgreSQL backend does.
 */
import type { ScalarType } from '../../database/index.js';

/*
 * Note [Numeric values of the legacy writes]
 * Hasura binds the values of `insert` and `update` as prepared arguments in PostgreSQL's binary
 * format (`binRHSBuilder`); postgresql-binary's numeric encoder gives a fractional number a scale
 * rounded up to a multiple of 4 digits (the base-10000 digits of the wire format): 1.1 is bound
 * as 1.1000, so `$mul: {price: 1.1}` on 45 gives 49.5000 and an inserted 4.25 is stored as
 * 4.2500. A JSON number for a `numeric` column is bound here as that text. (The request's JSON
 * was parsed into doubles, so a number written with trailing zeros, `2.0`, arrives as 2 and
 * keeps scale 0 where Hasura, reading its text, would give 2.0000.)
 */

/** A client's value for a column of type `t`, bound as Hasura binds it. */
export function legacyValue(val: unknown, t: ScalarType): unknown {
  return typeof val === 'number' && Number.isFinite(val) && t.bindAs === '"pg_catalog"."numeric"' ? hasuraNumeric(val) : val;
}

/** The decimal text of `n` with the scale postgresql-binary's numeric encoder gives it: the
 * exponent of `digits × 10^exp` rounded down to a multiple of 4 (Note [Numeric values of the
 * legacy writes]). */
export function hasuraNumeric(n: number): string {
  const [mantissa, e = '0'] = String(n).split('e');
  const negative = mantissa!.startsWith('-');
  const [int, frac = ''] = mantissa!.replace('-', '').split('.');
  let digits = int! + frac;
  let exp = Number(e) - frac.length;
  const r = ((exp % 4) + 4) % 4;
  digits += '0'.repeat(r);
  exp -= r;
  let text: string;
  if (exp >= 0) text = digits + '0'.repeat(exp);
  else {
    const padded = digits.padStart(1 - exp, '0');
    text = `${padded.slice(0, exp)}.${padded.slice(exp)}`;
  }
  return negative ? `-${text}` : text;
}
