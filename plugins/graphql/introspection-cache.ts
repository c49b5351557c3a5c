/**
 * Introspection answers kept for the build (Note [Introspection answers cached]).
 *
 * Note [Introspection answers cached]
 * `__schema` and `__type` are answered by a walk of the role's whole schema (Note [Introspection
 * written as text] in ./introspection.ts), and the standard introspection query that GraphiQL,
 * the console, Apollo's tools and code generators send walks every type: at 2,000 tables
 * (bench/metadata's, each with two relationships) a role that may select them all got 17.5 MiB
 * of answer, the admin 119 MiB, in 0.9 s and 6.6 s each time it asked again (graphql-js's
 * `execute` then; docs/benchmarks.md, "Introspection"). The answer is a function of the role's schema and the document alone where
 * the operation declares no variables (its arguments and directives are then literals), so such
 * an answer is kept, as its root fields' JSON texts (a long one as its bytes: Note [Long
 * introspection answers as bytes] in ./introspection.ts), by the plan cache's entry (Note [The plan
 * cache] in ./engine.ts), which is the (role, document, operation) it answers; Hasura keeps
 * introspection answers until the schema changes too. A metadata change empties it with the
 * plan cache. Bounded: at most MAX_ENTRIES answers of INTROSPECTION_CACHE_CHARS characters
 * together, least recently used first out, and an answer larger than that is not kept; so
 * documents made to differ cost what they cost without the cache, never memory past the bound.
 * An operation with variables is answered afresh each time. A kept answer still counts against
 * the request's size limit (--graphql-max-response-size, or what a batch has left of it).
 */

import type { IntrospectionText } from './introspection.js';

/** Characters of introspection answers kept at most (Note [Introspection answers cached]). */
export const INTROSPECTION_CACHE_CHARS = 128 * 1024 * 1024;
const MAX_ENTRIES = 64;

/** One answer: each introspection root field's JSON text by response key. */
export type IntrospectionTexts = Readonly<Record<string, IntrospectionText>>;

/** A kept answer, or that the answer is longer than `over` characters (it passed that budget). */
export type Kept = { texts: IntrospectionTexts; chars: number } | { over: number; chars: 0 };

export class IntrospectionAnswers<K extends object> {
  private readonly map = new Map<K, Kept>();
  private chars = 0;
  hits = 0;
  misses = 0;

  constructor(private readonly maxChars = INTROSPECTION_CACHE_CHARS) {}

  get(key: K): Kept | undefined {
    const hit = this.map.get(key);
    if (!hit) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.map.delete(key);
    this.map.set(key, hit);
    return hit;
  }

  /** Keeps an answer. */
  set(key: K, texts: IntrospectionTexts): void {
    let chars = 0;
    for (const k in texts) chars += texts[k]!.chars;
    if (chars <= this.maxChars) this.keep(key, { texts, chars });
  }

  /** Keeps that the answer passed a budget of `over` characters, so that a request with no more
   * budget is refused without walking the schema again. */
  setOver(key: K, over: number): void {
    const known = this.map.get(key);
    if (!(known && 'over' in known && known.over >= over)) this.keep(key, { over, chars: 0 });
  }

  private keep(key: K, kept: Kept): void {
    const old = this.map.get(key);
    if (old) {
      this.map.delete(key);
      this.chars -= old.chars;
    }
    for (const [k, v] of this.map) {
      if (this.chars + kept.chars <= this.maxChars && this.map.size < MAX_ENTRIES) break;
      this.map.delete(k);
      this.chars -= v.chars;
    }
    this.map.set(key, kept);
    this.chars += kept.chars;
  }

  clear(): void {
    this.map.clear();
    this.chars = 0;
  }

  stats(): { hits: number; misses: number; size: number; chars: number } {
    return { hits: this.hits, misses: this.misses, size: this.map.size, chars: this.chars };
  }
}
