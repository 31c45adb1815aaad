import { expect, test } from "vitest";
import { RestartLimiter } from "../src/limiter";

test("allows max restarts within the window, then refuses", () => {
  let now = 0;
  const limiter = new RestartLimiter(3, 60_000, () => now);
  expect([limiter.allow(), limiter.allow(), limiter.allow()]).toEqual([true, true, true]);
  now = 59_999;
  expect(limiter.allow()).toBe(false);
  expect(limiter.allow()).toBe(false);
  expect(limiter.count).toBe(3);
});

test("restarts older than the window no longer count", () => {
  let now = 0;
  const limiter = new RestartLimiter(2, 1000, () => now);
  expect(limiter.allow()).toBe(true);
  now = 600;
  expect(limiter.allow()).toBe(true);
  expect(limiter.allow()).toBe(false);
  now = 1000; // the first one is out of the window
  expect(limiter.allow()).toBe(true);
  expect(limiter.allow()).toBe(false);
  expect(limiter.count).toBe(2);
});

test("a refused restart does not extend the window", () => {
  let now = 0;
  const limiter = new RestartLimiter(1, 1000, () => now);
  expect(limiter.allow()).toBe(true);
  now = 900;
  expect(limiter.allow()).toBe(false);
  now = 1000;
  expect(limiter.allow()).toBe(true);
});

test("reset forgets", () => {
  const limiter = new RestartLimiter(1, 1000, () => 0);
  expect(limiter.allow()).toBe(true);
  expect(limiter.allow()).toBe(false);
  limiter.reset();
  expect(limiter.count).toBe(0);
  expect(limiter.allow()).toBe(true);
});
