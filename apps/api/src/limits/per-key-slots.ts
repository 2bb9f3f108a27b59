/**
 * Caps what one key holds open at once in this API process (long polls, event streams): each open
 * one takes a slot, released when it ends. A key at its cap is refused (429) until one ends.
 */
export class PerKeySlots {
  private readonly open = new Map<string, number>();

  constructor(readonly max: number) {}

  /** A release function, or null when the key already holds `max`. */
  take(keyId: string): (() => void) | null {
    const held = this.open.get(keyId) ?? 0;
    if (held >= this.max) return null;
    this.open.set(keyId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.open.get(keyId) ?? 1) - 1;
      if (now <= 0) this.open.delete(keyId);
      else this.open.set(keyId, now);
    };
  }
}
