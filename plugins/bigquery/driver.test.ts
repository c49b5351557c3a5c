/**
 * The Google-client side of the BigQuery boundary that runs without BigQuery: reading a job's
 * result page by page (readAllPages), over a job that answers as `Job.getQueryResults` does with
 * `autoPaginate: false` (`[rows, nextQuery, response]`).
 */
import { describe, expect, it } from 'vitest';
import { MAX_ROWS, readAllPages, type PagedJob } from './driver.js';

function job(pages: Record<string, unknown>[][], fields = ['id', 'name']): PagedJob & { asked: Record<string, unknown>[] } {
  const asked: Record<string, unknown>[] = [];
  return {
    asked,
    async getQueryResults(options) {
      asked.push(options);
      const i = options.pageToken === undefined ? 0 : Number(String(options.pageToken).slice(1));
      const next = i + 1 < pages.length ? { pageToken: `p${i + 1}`, jobId: 'j' } : null;
      return [pages[i], next, { schema: { fields: fields.map((name) => ({ name })) } }];
    },
  };
}

describe('readAllPages', () => {
  it('reads every page in order, asking for each with the token of the one before', async () => {
    const j = job([[{ id: 1, name: 'a' }, { id: 2, name: 'b' }], [{ id: 3, name: 'c' }], [{ name: 'd', id: 4 }]]);
    expect(await readAllPages(j)).toEqual({ columns: ['id', 'name'], rows: [[1, 'a'], [2, 'b'], [3, 'c'], [4, 'd']] });
    expect(j.asked).toEqual([{ autoPaginate: false }, { pageToken: 'p1', jobId: 'j', autoPaginate: false }, { pageToken: 'p2', jobId: 'j', autoPaginate: false }]);
  });

  it('answers the schema\'s columns for an empty result', async () => {
    expect(await readAllPages(job([[]]))).toEqual({ columns: ['id', 'name'], rows: [] });
  });

  it('stops at a cancelled signal between pages', async () => {
    let aborted = false;
    const signal = { get aborted() { return aborted; }, reason: new Error('cancelled') } as never;
    const j = job([[{ id: 1, name: 'a' }], [{ id: 2, name: 'b' }]]);
    const orig = j.getQueryResults.bind(j);
    j.getQueryResults = async (o) => {
      const r = await orig(o);
      aborted = true;
      return r;
    };
    await expect(readAllPages(j, signal)).rejects.toThrow('cancelled');
    expect(j.asked).toHaveLength(1);
  });

  it('refuses an answer of more than MAX_ROWS rows', async () => {
    const big = Array.from({ length: 1000 }, (_, i) => ({ id: i, name: 'x' }));
    const pages = Array.from({ length: Math.ceil(MAX_ROWS / 1000) + 2 }, () => big);
    await expect(readAllPages(job(pages))).rejects.toThrow(/more than 1000000 rows/);
  });
});
