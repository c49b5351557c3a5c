/**
 * How long an answer may be kept, from `Cache-Control` (`max-age` or `s-maxage`; `no-store` and
 * `no-cache` mean not at all) or else `Expires`, as Hasura reads them for JWK sets and webhook
 * answers. Returns milliseconds, or undefined when neither says anything usable.
 */
export function cacheLifetimeMs(cacheControl: string | null | undefined, expires: string | null | undefined, now = Date.now()): number | undefined {
  if (cacheControl) {
    const directives = cacheControl.toLowerCase().split(',').map((d) => d.trim());
    if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return 0;
    for (const d of directives) {
      const m = /^(?:s-maxage|max-age)\s*=\s*"?(\d+)"?$/.exec(d);
      if (m) return Number(m[1]) * 1000;
    }
  }
  if (expires) {
    const t = Date.parse(expires);
    if (!Number.isNaN(t)) return Math.max(0, t - now);
  }
  return undefined;
}
