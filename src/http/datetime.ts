/** The spec's `datetime`: `YYYY-MM-DD HH:MM:SS`, always UTC (the status endpoint's timeZone). */
export const TIME_ZONE = "UTC";

export function formatDatetime(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 19).replace("T", " ");
}

/** Datetimes that may never have happened are `false` in the API. */
export function datetimeOrFalse(seconds: number | null): string | false {
  return seconds === null ? false : formatDatetime(seconds);
}

export function nowInSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
