import { PagesAhead } from './pages-ahead';

const waitFor = async (done: () => boolean) => {
  for (const deadline = Date.now() + 5_000; !done(); await new Promise((r) => setTimeout(r, 5))) if (Date.now() > deadline) throw new Error('timed out');
};

describe('pages read ahead (PagesAhead)', () => {
  it('starts the read at once and hands it over once', async () => {
    const ahead = new PagesAhead<string>();
    let started = 0;
    ahead.put('p2', async () => `page ${++started}`);
    expect(started).toBe(1);
    await expect(ahead.take('p2')).resolves.toBe('page 1');
    expect(ahead.take('p2')).toBeUndefined();
    expect(ahead.take('p3')).toBeUndefined();
  });

  it('does not read a page twice, nor more than `max` at once', () => {
    const ahead = new PagesAhead<number>(2);
    let reads = 0;
    const read = async () => ++reads;
    ahead.put('a', read);
    ahead.put('a', read);
    ahead.put('b', read);
    ahead.put('c', read);
    expect(reads).toBe(2);
    expect(ahead.size).toBe(2);
    expect(ahead.take('c')).toBeUndefined();
  });

  it('forgets a page nobody took within its time', async () => {
    const ahead = new PagesAhead<string>(16, 30);
    ahead.put('p2', async () => 'page');
    await waitFor(() => ahead.size === 0);
    expect(ahead.take('p2')).toBeUndefined();
  });

  it('keeps a failed read quiet until taken, and hands over its failure', async () => {
    const ahead = new PagesAhead<string>();
    ahead.put('p2', async () => Promise.reject(new Error('the database went away')));
    await new Promise((r) => setImmediate(r));
    await expect(ahead.take('p2')).rejects.toThrow('the database went away');
  });

  it('clear forgets every page', () => {
    const ahead = new PagesAhead<string>();
    ahead.put('a', async () => 'a');
    ahead.clear();
    expect(ahead.size).toBe(0);
  });
});
