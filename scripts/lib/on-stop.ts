/**
 * Clean-ups that must run even when the process is told to stop (Ctrl-C, `kill`, a closed
 * terminal): while any is registered, SIGINT, SIGTERM and SIGHUP run them all, newest first, and
 * the process exits with 128 + the signal's number, as the signal itself would have ended it.
 * SIGKILL cannot be caught; nothing here survives that.
 */
import { constants } from "node:os";

const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
const cleanups: (() => void)[] = [];

function stop(signal: NodeJS.Signals): void {
  for (const cleanup of [...cleanups].reverse()) {
    try {
      cleanup();
    } catch (err) {
      console.error(err);
    }
  }
  process.exit(128 + constants.signals[signal]);
}

/** Registers a synchronous clean-up; returns the function that unregisters it. */
export function onStop(cleanup: () => void): () => void {
  if (cleanups.length === 0) for (const signal of SIGNALS) process.on(signal, stop);
  cleanups.push(cleanup);
  return () => {
    const index = cleanups.indexOf(cleanup);
    if (index >= 0) cleanups.splice(index, 1);
    // With nothing left to clean up, signals get their usual meaning back.
    if (cleanups.length === 0) for (const signal of SIGNALS) process.off(signal, stop);
  };
}
