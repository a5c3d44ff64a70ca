/**
 * `npm run lint:imports`: no module may import itself back through others (STYLE "No import
 * circles"). `import type` counts: a circle of types is a circle of layers all the same.
 * @type {import("dependency-cruiser").IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "Move the types both sides need into a module low enough that it imports neither (env.ts, rate-limiter-rpc.ts).",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
  },
};
