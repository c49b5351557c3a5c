/**
 * The bound of the introspection answers kept (Note [Introspection answers cached] in
 * ./introspection-cache.ts); their use by the engine is tested in ./engine.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { IntrospectionAnswers } from './introspection-cache.js';

const t = (text: string) => ({ text, chars: text.length });

describe('introspection answers kept', () => {
  it('keeps answers within its characters, the least recently used going first; a larger one is not kept', () => {
    const c = new IntrospectionAnswers<object>(10);
    const [a, b, d, big] = [{}, {}, {}, {}];
    c.set(a, { __schema: t('1234') });
    c.set(b, { __schema: t('12'), t: t('34') });
    expect(c.get(a)).toEqual({ texts: { __schema: t('1234') }, chars: 4 }); // a is now the most recently used
    c.set(d, { __schema: t('123') }); // 11 characters: b goes
    expect(c.stats()).toEqual({ hits: 1, misses: 0, size: 2, chars: 7 });
    expect(c.get(b)).toBeUndefined();
    expect(c.get(a)).toBeDefined();
    expect(c.get(d)).toBeDefined();
    c.set(big, { __schema: t('12345678901') });
    expect(c.get(big)).toBeUndefined();
    expect(c.stats()).toMatchObject({ size: 2, chars: 7 });
    // Set again: replaced, counted once.
    c.set(a, { __schema: t('123456') });
    expect(c.stats()).toMatchObject({ size: 2, chars: 9 });
    c.clear();
    expect(c.stats()).toMatchObject({ size: 0, chars: 0 });
    expect(c.get(a)).toBeUndefined();
    // An answer kept as bytes counts its characters (Note [Long introspection answers as bytes]).
    c.set(a, { __schema: { text: Buffer.from('"é…é"'), chars: 5 } });
    expect(c.stats()).toMatchObject({ size: 1, chars: 5 });
  });

  it('keeps that an answer passed a budget, the largest such budget, taking no characters', () => {
    const c = new IntrospectionAnswers<object>(10);
    const k = {};
    c.setOver(k, 100);
    c.setOver(k, 50); // less than known: kept as it was
    expect(c.get(k)).toEqual({ over: 100, chars: 0 });
    c.setOver(k, 200);
    expect(c.get(k)).toEqual({ over: 200, chars: 0 });
    c.set(k, { __schema: t('12') });
    expect(c.get(k)).toEqual({ texts: { __schema: t('12') }, chars: 2 });
    expect(c.stats()).toMatchObject({ size: 1, chars: 2 });
  });

  it('keeps at most 64 answers', () => {
    const c = new IntrospectionAnswers<object>();
    const keys = Array.from({ length: 70 }, () => ({}));
    for (const k of keys) c.set(k, { __typename: t('x') });
    expect(c.stats().size).toBe(64);
    expect(c.get(keys[5]!)).toBeUndefined();
    expect(c.get(keys[6]!)).toBeDefined();
  });
});
