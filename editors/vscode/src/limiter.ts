/**
 * How often a crashed server is restarted on its own: at most `max` times within `windowMs`;
 * past that it stays stopped until the user restarts it, so a server that dies on start
 * cannot put the editor in a restart loop.
 */

export class RestartLimiter {
  private times: number[] = [];

  constructor(
    readonly max = 3,
    readonly windowMs = 3 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether one more automatic restart is allowed now; if so it is counted. */
  allow(): boolean {
    const now = this.now();
    this.times = this.times.filter((time) => now - time < this.windowMs);
    if (this.times.length >= this.max) {
      return false;
    }
    this.times.push(now);
    return true;
  }

  /** How many automatic restarts were counted within the window. */
  get count(): number {
    const now = this.now();
    return this.times.filter((time) => now - time < this.windowMs).length;
  }

  /** Forget past restarts (the user asked for a restart, or changed the server setting). */
  reset(): void {
    this.times = [];
  }
}
