/**
 * The one list machine (spec "Common conventions"): multi-valued parameters, pagination, sorting,
 * selection and filters, read from the query string and checked against what an endpoint
 * declares. Every list endpoint parses its query here and nowhere else; anything it does not
 * declare is a 400 that names the parameter, never its value.
 */
import { strtotime } from "locutus/php/datetime/strtotime";
import type { Context } from "hono";
import type { Page } from "../db/queries/page";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { JsonText, respond } from "./container";
import { RESERVED_PARAMETERS } from "./reserved-parameters";
import { LAST_SECOND, parseDatetime } from "./datetime";
import type { Parameter } from "./openapi";

/** Spec "Limits": at most 1000 per page, and at most the first 1000 results of a set at all. */
const MAX_RESULTS = 1000;
const DEFAULT_LIMIT = 100;
/** Longest value a list parameter takes, and most values one multi-valued parameter takes. */
const MAX_VALUE_LENGTH = 255;
const MAX_VALUES = 40;
/**
 * Most values all criteria of one request take together. Each becomes a bound parameter, a value
 * may be bound twice (a product and its children), and D1 allows 100 per statement, a dozen of
 * which the endpoint's own conditions and the page take.
 */
const MAX_CRITERIA_VALUES = 40;
const MAX_TIME_EXPRESSION_LENGTH = 64;

export type SortDirection = "asc" | "desc";
export type SortTerm<Sort extends string> = { property: Sort; direction: SortDirection };

/** What an endpoint accepts. Filters are grouped: status filters OR-ed, type filters OR-ed, the groups AND-ed. */
export type ListSpec<Sort extends string, Field extends string, Criterion extends string> = {
  sorts: readonly Sort[];
  /** Most sort terms one query may give, when fewer than `sorts` (an order its indexes can deliver). */
  maxSortTerms?: number;
  /**
   * The order when none is asked for: it may depend on the filters (`updated`: newest first) and
   * on whether `since` or `until` bound a time (then by that time, which its index delivers).
   */
  defaultSort: (query: { filters: ListFilters; bounded: boolean }) => SortTerm<Sort>[];
  statusFilters: readonly string[];
  typeFilters: readonly string[];
  /** Filters that are neither (`updated`, `merchant`). */
  otherFilters: readonly string[];
  fields: readonly Field[];
  /** Query parameters that select by a property, each with one or several values. */
  criteria: readonly Criterion[];
};

export type ListFilters = { status: string[]; type: string[]; other: string[] };

export type ListQuery<Sort extends string, Field extends string, Criterion extends string> = {
  limit: number;
  offset: number;
  since: number | null;
  until: number | null;
  sort: SortTerm<Sort>[];
  /** Null when the whole object is wanted. */
  fields: Field[] | null;
  filters: ListFilters;
  where: Partial<Record<Criterion, string[]>>;
};

export function invalidParameter(name: string, accepted?: readonly string[]): ApiError {
  const hint = accepted === undefined ? "" : ` (accepted: ${accepted.join(", ")})`;
  return new ApiError(400, "invalid_request", `Invalid parameter value: ${name}${hint}`);
}

/**
 * The query's parameters by name: `key=v`, `key=v1,v2` and `key[]=v1&key[]=v2` all give a list of
 * values. Sort terms are kept apart, in the order given, whether as `sort[prop]=asc|desc` or as
 * `sort=prop,-prop` (also `sort[]=`): each a property and a direction as sent.
 */
function collect(url: URL): { values: Map<string, string[]>; sortTerms: [string, string][] } {
  const values = new Map<string, string[]>();
  const sortTerms: [string, string][] = [];
  for (const [rawKey, value] of url.searchParams) {
    if (RESERVED_PARAMETERS.has(rawKey)) continue;
    const key = rawKey.endsWith("[]") ? rawKey.slice(0, -2) : rawKey;
    const bracketed = /^sort\[([^\]]+)\]$/.exec(rawKey)?.[1];
    if (bracketed !== undefined) {
      sortTerms.push([bracketed, value]);
    } else if (key === "sort") {
      for (const term of multiple("sort", [value])) {
        sortTerms.push(term.startsWith("-") ? [term.slice(1), "desc"] : [term.replace(/^\+/, ""), "asc"]);
      }
    } else {
      const list = values.get(key);
      if (list) list.push(value);
      else values.set(key, [value]);
    }
  }
  return { values, sortTerms };
}

/**
 * A regular-expression literal, `/pattern/flags`: a value in this form is one value, never split
 * at its commas (`/^a{1,3}/`).
 */
const REGEX_LITERAL = /^\/(.+)\/([a-z]*)$/s;

export function regexLiteral(value: string): { pattern: string; flags: string } | null {
  const match = REGEX_LITERAL.exec(value);
  return match ? { pattern: match[1]!, flags: match[2]! } : null;
}

/** Comma-separated values, each trimmed and non-empty, within the value limits. */
function multiple(name: string, raw: string[]): string[] {
  const list = raw
    .flatMap((value) => (REGEX_LITERAL.test(value.trim()) ? [value] : value.split(",")))
    .map((value) => value.trim());
  if (list.length > MAX_VALUES || list.some((value) => value === "" || value.length > MAX_VALUE_LENGTH)) {
    throw invalidParameter(name);
  }
  return list;
}

function single(name: string, raw: string[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (raw.length !== 1) throw invalidParameter(name);
  return raw[0]!.trim();
}

function count(name: string, raw: string[] | undefined, fallback: number, range: { min: number; max: number }) {
  const text = single(name, raw);
  if (text === undefined) return fallback;
  if (!/^\d{1,9}$/.test(text) || Number(text) < range.min) throw invalidParameter(name);
  return Math.min(Number(text), range.max);
}

/**
 * A point in time as Unix seconds: a timestamp (digits only), a date (`2024-01-31`, `2024-01-31
 * 12:00:00`) or a fuzzy expression as PHP's strtotime reads it (`yesterday`, `first day of
 * January`, `-3 days`), relative to `now`, in UTC.
 */
export function parseTime(text: string, now: number): number | null {
  let seconds: number | false | null;
  if (/^\d+$/.test(text)) seconds = text.length <= 12 ? Number(text) : null;
  // Dates are read here, not by strtotime, which moves impossible ones to other days.
  else if (/^\d+-/.test(text)) seconds = parseDatetime(text, { dateAlone: true });
  else if (text === "" || text.length > MAX_TIME_EXPRESSION_LENGTH) seconds = null;
  else seconds = strtotime(text, now);
  return typeof seconds === "number" && Number.isInteger(seconds) && seconds >= 0 && seconds <= LAST_SECOND
    ? seconds
    : null;
}

function time(name: string, raw: string[] | undefined, now: number): number | null {
  const text = single(name, raw);
  if (text === undefined) return null;
  const seconds = parseTime(text, now);
  if (seconds === null) throw invalidParameter(name);
  return seconds;
}

function sortTerms<Sort extends string>(
  spec: { sorts: readonly Sort[]; maxSortTerms?: number },
  terms: [string, string][],
): SortTerm<Sort>[] {
  if (terms.length > Math.min(MAX_VALUES, spec.maxSortTerms ?? MAX_VALUES)) throw invalidParameter("sort");
  const seen = new Set<string>();
  return terms.map(([property, direction]) => {
    if (!(spec.sorts as readonly string[]).includes(property) || seen.has(property))
      throw invalidParameter("sort", spec.sorts);
    seen.add(property);
    const lower = direction.trim().toLowerCase();
    if (lower !== "asc" && lower !== "desc") throw invalidParameter(`sort[${property}]`, ["asc", "desc"]);
    return { property: property as Sort, direction: lower };
  });
}

/** Parses and checks a list endpoint's query string against what the endpoint accepts. */
export function parseListQuery<Sort extends string, Field extends string, Criterion extends string>(
  url: URL,
  spec: ListSpec<Sort, Field, Criterion>,
  now: number,
): ListQuery<Sort, Field, Criterion> {
  const { values, sortTerms: requestedSort } = collect(url);
  const known = new Set<string>(["limit", "offset", "since", "until", "sort", "fields", "filters", ...spec.criteria]);
  if ([...values.keys()].some((name) => !known.has(name))) {
    throw new ApiError(400, "invalid_request", `Unknown parameter; this endpoint accepts ${[...known].join(", ")}`);
  }

  const filters: ListFilters = { status: [], type: [], other: [] };
  for (const filter of multiple("filters", values.get("filters") ?? [])) {
    const group = spec.statusFilters.includes(filter)
      ? filters.status
      : spec.typeFilters.includes(filter)
        ? filters.type
        : spec.otherFilters.includes(filter)
          ? filters.other
          : null;
    if (group === null)
      throw invalidParameter("filters", [...spec.statusFilters, ...spec.typeFilters, ...spec.otherFilters]);
    if (!group.includes(filter)) group.push(filter);
  }

  const fieldsParam = values.get("fields");
  const fields = fieldsParam === undefined ? null : multiple("fields", fieldsParam);
  if (fields?.some((field) => !(spec.fields as readonly string[]).includes(field)))
    throw invalidParameter("fields", spec.fields);

  const sort = sortTerms(spec, requestedSort);
  const where: Partial<Record<Criterion, string[]>> = {};
  let criteriaValues = 0;
  for (const criterion of spec.criteria) {
    const raw = values.get(criterion);
    if (raw === undefined) continue;
    where[criterion] = multiple(criterion, raw);
    criteriaValues += where[criterion].length;
    if (criteriaValues > MAX_CRITERIA_VALUES) throw invalidParameter(criterion);
  }

  const since = time("since", values.get("since"), now);
  const until = time("until", values.get("until"), now);
  return {
    limit: count("limit", values.get("limit"), DEFAULT_LIMIT, { min: 1, max: MAX_RESULTS }),
    offset: offset(values.get("offset")),
    since,
    until,
    sort: sort.length > 0 ? sort : spec.defaultSort({ filters, bounded: since !== null || until !== null }),
    fields: fields as Field[] | null,
    filters,
    where,
  };
}

/** A criterion's values as integers (ids, prices); anything else is a 400 naming it. */
export function integerValues(name: string, values: string[] | undefined): number[] | undefined {
  if (values === undefined) return undefined;
  if (values.some((value) => !/^-?\d{1,15}$/.test(value))) throw invalidParameter(name);
  return values.map(Number);
}

/** Results to skip: 0 to 999, as no page reaches past the 1000th result. */
function offset(raw: string[] | undefined): number {
  const skipped = count("offset", raw, 0, { min: 0, max: MAX_RESULTS });
  if (skipped >= MAX_RESULTS) throw invalidParameter("offset");
  return skipped;
}

/** The page a query asks for; it never reaches past the 1000th result. */
export function pageOf<Sort extends string>(query: ListQuery<Sort, string, string>): Page<Sort> {
  const { since, until, sort, offset } = query;
  return { since, until, sort, limit: Math.max(0, Math.min(query.limit, MAX_RESULTS - offset)), offset };
}

/**
 * A page of a list in the container: each row rendered by `view` and trimmed to the selected
 * fields, `meta` counting the page (and carrying what an endpoint adds), `debug.params` showing
 * the parsed query. `viewJson`, when given, is a row's whole view as JSON text, kept between
 * requests by the endpoint: used when no fields are selected.
 */
export function respondPage<Row>(
  c: Context<AppEnv>,
  object: string,
  query: ListQuery<string, string, string>,
  rows: Row[],
  view: (row: Row) => Record<string, unknown>,
  meta: Record<string, unknown> = {},
  viewJson?: (row: Row) => string,
): Response | Promise<Response> {
  const { where, ...options } = query;
  return respond(c, {
    object,
    type: "collection",
    data:
      query.fields === null && viewJson
        ? new JsonText(`[${rows.map(viewJson).join(",")}]`)
        : rows.map((row) => selectFields(view(row), query.fields)),
    meta: { count: rows.length, offset: query.offset, ...meta },
    params: { options, where },
  });
}

/** An object trimmed to the selected fields, in the order they were asked for. */
export function selectFields(item: Record<string, unknown>, fields: readonly string[] | null): Record<string, unknown> {
  return fields === null ? item : Object.fromEntries(fields.map((field) => [field, item[field]]));
}

/** The query parameters a list endpoint takes, for the OpenAPI document. */
export function listParameters(
  spec: ListSpec<string, string, string>,
  criteria: Record<string, string> = {},
): Parameter[] {
  const list = (description: string): Parameter["schema"] => ({ type: "string", description });
  const filters = [...spec.statusFilters, ...spec.typeFilters, ...spec.otherFilters];
  return [
    {
      name: "limit",
      in: "query",
      schema: { type: "integer", minimum: 1, maximum: MAX_RESULTS, default: DEFAULT_LIMIT },
    },
    { name: "offset", in: "query", schema: { type: "integer", minimum: 0, maximum: MAX_RESULTS - 1, default: 0 } },
    { name: "since", in: "query", schema: list("Unix seconds, a date, or a strtotime expression (`yesterday`)") },
    { name: "until", in: "query", schema: list("Unix seconds, a date, or a strtotime expression (`now`)") },
    {
      name: "sort",
      in: "query",
      description: `\`sort=prop\`, \`sort=-prop\` or \`sort[prop]=asc|desc\`; properties: ${spec.sorts.join(", ")}`,
      schema: { type: "string" },
    },
    { name: "fields", in: "query", schema: list(`Comma-separated, any of: ${spec.fields.join(", ")}`) },
    ...(filters.length > 0
      ? [{ name: "filters", in: "query" as const, schema: list(`Comma-separated, any of: ${filters.join(", ")}`) }]
      : []),
    ...spec.criteria.map((name): Parameter => ({
      name,
      in: "query",
      schema: list(criteria[name] ?? "Exact match; several values (`v1,v2` or `key[]=`) are OR-ed"),
    })),
  ];
}
