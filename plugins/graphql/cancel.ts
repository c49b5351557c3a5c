/**
 * A request's cancellation (RunContext.signal): what AbortController does, for the engine's hot
 * path. Node's AbortController costs about 7 us to make (measured on the development machine,
 * 2026-11-26, `.prof/ac2.mjs`: 200,000 constructions), a twentieth of a cached request's whole
 * cost; this costs an object. It has the part of AbortSignal that statements use, so a plugin can
 * treat it as one.
 */
import type { CancelSignal } from '../../core/plugin.js';

export class Cancellation implements CancelSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] | undefined;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const ls = this.listeners;
    this.listeners = undefined;
    if (ls) for (const l of ls) l();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const ls = this.listeners;
    if (!ls) return;
    const i = ls.indexOf(listener);
    if (i >= 0) ls.splice(i, 1);
  }
}
