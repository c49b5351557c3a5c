import { describe, expect, it } from 'vitest';
import { createLogger } from './log.js';

describe('createLogger', () => {
  it('writes the lines of its level and above, and says which levels it writes', () => {
    const lines: string[] = [];
    const log = createLogger('warn', (l) => lines.push(l));
    expect(['debug', 'info', 'warn', 'error'].map((l) => log.enabled?.(l as 'info'))).toEqual([false, false, true, true]);
    log.info('http-log', { a: 1 });
    log.warn('w', { b: 2 });
    log.error('e', {});
    expect(lines.map((l) => JSON.parse(l).type)).toEqual(['w', 'e']);
    expect(createLogger('debug', () => {}).enabled?.('debug')).toBe(true);
  });
});
