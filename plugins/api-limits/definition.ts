/**
 * The `api_limits` metadata section (Hasura v2 Enterprise's ApiLimit, Hasura/RQL/Types/ApiLimit.hs):
 * its shape as `set_api_limits` takes it and export shows it, and the limits of one role.
 */
import * as v from '../../core/valibot.js';
import type { Metadata } from '../../core/plugin.js';
import { nameText } from '../../core/validation.js';

const count = v.pipe(v.number(), v.integer('expected an integer'), v.minValue(1, 'expected an integer of at least 1'));
const seconds = v.pipe(v.number(), v.gtValue(0, 'expected a number of seconds greater than 0'), v.maxValue(86_400, 'expected at most 86400 seconds'));

/** `IP`, or session variables (not the role): who a rate limit counts apart within a role. */
const UniqueParams = v.union(
  [
    v.pipe(
      v.string(),
      v.check((s) => s.toLowerCase() === 'ip', 'Not a valid value. Should be either: \'IP\' or a list of Svc session variables'),
      v.transform(() => 'IP' as const),
    ),
    v.array(
      v.pipe(
        v.string(),
        v.transform((s) => s.toLowerCase()),
        v.check((s) => s.startsWith('x-svc-') && s !== 'x-svc-role', 'Not a valid value. Should be either: \'IP\' or a list of Svc session variables'),
      ),
    ),
  ],
  'Not a valid value. Should be either: \'IP\' or a list of Svc session variables',
);

const RateLimitConfig = v.object({
  max_reqs_per_min: count,
  unique_params: v.optional(v.nullable(UniqueParams), null),
});

/** `{global, per_role?}`: per_role is kept (empty when not given), as Hasura exports it. */
const limit = <S extends v.GenericSchema>(value: S) => v.object({ global: value, per_role: v.optional(v.record(nameText, value), {}) });

export const ApiLimitsSchema = v.pipe(
  v.object({
    disabled: v.optional(v.boolean(), false),
    rate_limit: v.optional(limit(RateLimitConfig)),
    depth_limit: v.optional(limit(count)),
    node_limit: v.optional(limit(count)),
    time_limit: v.optional(limit(seconds)),
    batch_limit: v.optional(limit(count)),
  }),
  // Only the limits that were given, in Hasura's export order.
  v.transform((a) => {
    const out: ApiLimits = { disabled: a.disabled };
    for (const key of LIMIT_KEYS) if (a[key] !== undefined) (out as unknown as Record<string, unknown>)[key] = a[key];
    return out;
  }),
);

const LIMIT_KEYS = ['rate_limit', 'depth_limit', 'node_limit', 'time_limit', 'batch_limit'] as const;

export interface RateLimitConfig {
  max_reqs_per_min: number;
  unique_params: 'IP' | string[] | null;
}
interface Limit<T> {
  global: T;
  per_role: Record<string, T>;
}
export interface ApiLimits {
  disabled: boolean;
  rate_limit?: Limit<RateLimitConfig>;
  depth_limit?: Limit<number>;
  node_limit?: Limit<number>;
  time_limit?: Limit<number>;
  batch_limit?: Limit<number>;
}

export const EMPTY: ApiLimits = Object.freeze({ disabled: false }) as ApiLimits;

export function apiLimitsOf(md: Metadata): ApiLimits {
  return (md.api_limits as ApiLimits | undefined) ?? EMPTY;
}

/** Hasura leaves the section out of the export when it is its empty value. */
export function isEmptyLimits(x: unknown): boolean {
  if (x == null) return true;
  const a = x as ApiLimits;
  return !a.disabled && LIMIT_KEYS.every((k) => a[k] === undefined);
}

/** What binds one role: its own value of each limit, else the global one. The admin role is
 * never limited, nor is any role while the limits are disabled. */
export interface RoleLimits {
  depth?: number;
  nodes?: number;
  batch?: number;
  timeSeconds?: number;
  rate?: RateLimitConfig;
}

export function roleLimits(a: ApiLimits, role: string): RoleLimits | undefined {
  // Every request asks: nothing is made when there are no limits (the common case).
  if (a.disabled || role === 'admin' || isEmptyLimits(a)) return undefined;
  const of = <T>(l: Limit<T> | undefined): T | undefined => (l ? (Object.hasOwn(l.per_role, role) ? l.per_role[role] : l.global) : undefined);
  const r: RoleLimits = {
    depth: of(a.depth_limit),
    nodes: of(a.node_limit),
    batch: of(a.batch_limit),
    timeSeconds: of(a.time_limit),
    rate: of(a.rate_limit),
  };
  return r.depth === undefined && r.nodes === undefined && r.batch === undefined && r.timeSeconds === undefined && r.rate === undefined ? undefined : r;
}
