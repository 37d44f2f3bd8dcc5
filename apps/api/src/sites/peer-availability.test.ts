import { describe, expect, it } from 'vitest';
import { PeerAvailability } from './peer-availability';

function memory(downMs = 30_000): { peers: PeerAvailability; advance: (ms: number) => void } {
  let now = 1_000_000;
  const peers = new PeerAvailability({ peerReads: { connectTimeoutMs: 1000, downMs } });
  peers.now = () => now;
  return { peers, advance: (ms) => (now += ms) };
}

describe('PeerAvailability', () => {
  it('tries a site that did not answer last, for downMs, then in its place again', () => {
    const { peers, advance } = memory();
    expect(peers.order(['lsu', 'tulane', 'uno'])).toEqual(['lsu', 'tulane', 'uno']);
    peers.markDown('lsu');
    expect(peers.isDown('lsu')).toBe(true);
    expect(peers.order(['lsu', 'tulane', 'uno'])).toEqual(['tulane', 'uno', 'lsu']);
    expect(peers.down()).toEqual(['lsu']);
    advance(29_999);
    expect(peers.isDown('lsu')).toBe(true);
    advance(1);
    expect(peers.isDown('lsu')).toBe(false);
    expect(peers.order(['lsu', 'tulane', 'uno'])).toEqual(['lsu', 'tulane', 'uno']);
  });

  it('forgets a site that answered at once, and keeps the given order among down sites', () => {
    const { peers } = memory();
    peers.markDown('uno');
    peers.markDown('lsu');
    expect(peers.order(['lsu', 'tulane', 'uno'])).toEqual(['tulane', 'lsu', 'uno']);
    peers.markUp('uno');
    expect(peers.order(['lsu', 'tulane', 'uno'])).toEqual(['tulane', 'uno', 'lsu']);
  });

  it('remembers nothing with downMs 0', () => {
    const { peers } = memory(0);
    peers.markDown('lsu');
    expect(peers.isDown('lsu')).toBe(false);
  });
});
