import { stableHash, subjects } from '@steerline/contracts';
import { balance, fairShare, filteredLayout, partitionName, partitionNames, partitionOf } from './partitions';

describe('partitionOf', () => {
  const subject = (cid: string) => `steerline.evt.acme.${cid}`;

  it('puts every event of a conversation in the same partition, whatever its tenant or prefix', () => {
    const cid = '01a23180-24bd-7884-8ce6-b62caa25a850';
    expect(partitionOf(subject(cid), 4)).toBe(partitionOf(`other.evt.tenant2.${cid}`, 4));
    expect(partitionOf(subject(cid), 4)).toBe(stableHash(cid) % 4);
  });

  it('spreads conversations evenly over the partitions', () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[partitionOf(subject(`0190${i.toString(16).padStart(4, '0')}-0000-7000-8000-${i.toString().padStart(12, '0')}`), 4)] += 1;
    for (const n of counts) expect(n).toBeGreaterThan(800);
  });

  it('puts an event on a partitioned subject where its token says, and in the same partition as its unpartitioned events', () => {
    const s = subjects('steerline', { subjectPartitions: 4 });
    for (const cid of ['a', 'b', 'c', '01a23180-24bd-7884-8ce6-b62caa25a850']) {
      const token = Number(s.conversationEvents('acme', cid).split('.').at(-1));
      expect(partitionOf(s.conversationEvents('acme', cid), 4)).toBe(token);
      expect(partitionOf(subject(cid), 4)).toBe(token);
    }
  });

  it('gives a malformed subject to exactly one partition', () => {
    expect(partitionOf('steerline.evt.x', 4)).toBe(stableHash('steerline.evt.x') % 4);
  });

  it('is 0 with one partition', () => {
    expect(partitionOf(subject('x'), 1)).toBe(0);
  });
});

describe('filteredLayout', () => {
  it('filters only when the log has as many subject partitions as the generation has partitions', () => {
    expect(filteredLayout(subjects('p', { subjectPartitions: 4 }), 4)).toBe(true);
    expect(filteredLayout(subjects('p', { subjectPartitions: 4 }), 2)).toBe(false);
    expect(filteredLayout(subjects('p'), 4)).toBe(false);
    expect(filteredLayout(subjects('p', { subjectPartitions: 1 }), 1)).toBe(false);
  });
});

describe('partitionName', () => {
  it('keeps the name from before partitions for a single one', () => {
    expect(partitionName('steerline-projector', 0, 1)).toBe('steerline-projector');
    expect(partitionNames('steerline-projector', 1)).toEqual(['steerline-projector']);
  });

  it('names each of several partitions with the count, so another layout never reuses a checkpoint', () => {
    expect(partitionNames('p', 4)).toEqual(['p-0of4', 'p-1of4', 'p-2of4', 'p-3of4']);
  });
});

describe('balance', () => {
  it('shares four partitions between two instances two and two', () => {
    expect(fairShare(4, 2)).toBe(2);
    expect(balance({ count: 4, members: 2, held: [0, 1, 2, 3] })).toEqual({ release: [3, 2], tryAcquire: [] });
    expect(balance({ count: 4, members: 2, held: [0, 1] })).toEqual({ release: [], tryAcquire: [] });
  });

  it('takes every partition when it is the only instance', () => {
    expect(balance({ count: 4, members: 1, held: [1, 3] })).toEqual({ release: [], tryAcquire: [0, 2] });
  });

  it('tries the free partitions from its own offset', () => {
    expect(balance({ count: 4, members: 2, held: [], offset: 6 }).tryAcquire).toEqual([2, 3, 0, 1]);
  });

  it('rounds the share up, so every partition has a taker', () => {
    expect(fairShare(4, 3)).toBe(2);
    expect(fairShare(1, 5)).toBe(1);
  });
});
