/**
 * `npm start` (test/cli/running-server.ts). What only the real local server shows is tested here:
 * bodies the Worker refuses must not take the server down.
 */
import { execFile } from "node:child_process";
import { request } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { npmScript } from "./commands";
import { type RunningServer, startServer } from "./running-server";

let server: RunningServer;
let base: string;

/** A POST whose body is sent in `chunks` pieces of `chunkSize` bytes, chunked unless a length is given. */
function post(
  path: string,
  { chunks, chunkSize, contentLength }: { chunks: number; chunkSize: number; contentLength?: boolean },
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((done, fail) => {
    const headers: Record<string, string> = { "Content-Type": "application/x-www-form-urlencoded" };
    if (contentLength) headers["Content-Length"] = String(chunks * chunkSize);
    const req = request(`${base}${path}`, { method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (part: string) => (text += part));
      res.on("end", () => done({ status: res.statusCode!, headers: res.headers, text }));
    });
    // The server may answer and close before the last chunk is written.
    req.on("error", fail);
    const chunk = Buffer.alloc(chunkSize, "a");
    req.write("grant_type=client_credentials&x=");
    for (let i = 0; i < chunks; i++) req.write(chunk);
    req.end();
  });
}

/** Sends raw HTTP/1.1 (what fetch would not send) and returns the response's status code. */
async function rawStatus(head: string, body = ""): Promise<number> {
  const socket = connect(Number(new URL(base).port), "127.0.0.1");
  let response = "";
  socket.setEncoding("utf8");
  socket.on("data", (part: string) => (response += part));
  await new Promise((done) => socket.once("connect", done));
  socket.write(`${head}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n${body}`);
  await new Promise((done) => socket.once("close", done));
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
}

async function statusCode(): Promise<number> {
  return (await fetch(`${base}/api/2/status`)).status;
}

beforeAll(async () => {
  server = await startServer();
  base = server.base;
}, 180_000);

afterAll(() => server?.stop(), 60_000);

describe("npm start", () => {
  it("serves the demo data", async () => {
    expect(await statusCode()).toBe(200);
    const res = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: {
        Authorization: `Basic ${btoa("4f1c2a9d8e7b6c5a4f3e2d1c:nd-web-secret-7Qm2")}`,
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    expect(res.status).toBe(200);
  });

  it("answers a chunked body over 64 KiB with 413 and stays up", async () => {
    const res = await post("/oauth/token", { chunks: 70, chunkSize: 1000 });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.text)).toMatchObject({ error: "invalid_request", error_code: 413 });
    expect(await statusCode()).toBe(200);
  });

  it("answers a 5 MB chunked body with 413, no stack trace, and stays up", async () => {
    const res = await post("/oauth/token", { chunks: 80, chunkSize: 64 * 1024 });
    expect(res.status).toBe(413);
    expect(res.text).not.toMatch(/\bat |file:|node_modules|Error:/);
    expect(await statusCode()).toBe(200);
  });

  it("answers a declared 5 MB body on a GET-only endpoint with 413 and stays up", async () => {
    const res = await post("/api/2/status", { chunks: 80, chunkSize: 64 * 1024, contentLength: true });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.text)).toMatchObject({ code: 413, error: { error_code: 413 } });
    expect(await statusCode()).toBe(200);
  });

  it("answers a GET or HEAD that carries a body as if it had none", async () => {
    expect(await rawStatus("GET /api/2/status HTTP/1.1\r\nContent-Length: 0")).toBe(200);
    expect(await rawStatus("GET /api/2/status HTTP/1.1\r\nContent-Length: 5", "hello")).toBe(200);
    expect(await rawStatus("HEAD /api/2/status HTTP/1.1\r\nContent-Length: 0")).toBe(200);
    expect(await rawStatus("GET /api/2/status HTTP/1.1\r\nTransfer-Encoding: chunked", "5\r\nhello\r\n0\r\n\r\n")).toBe(
      200,
    );
    expect(await rawStatus("GET /nowhere HTTP/1.1\r\nContent-Length: 0")).toBe(404);
    expect(await statusCode()).toBe(200);
  });

  it("stays up when a client hangs up in the middle of a chunked body", async () => {
    const socket = connect(Number(new URL(base).port), "127.0.0.1");
    await new Promise((done) => socket.once("connect", done));
    socket.write(
      "POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n" +
        "Content-Type: application/x-www-form-urlencoded\r\n\r\n10\r\naaaaaaaaaaaaaaaa\r\n",
    );
    await new Promise((done) => setTimeout(done, 300));
    socket.destroy();
    await new Promise((done) => setTimeout(done, 500));
    expect(await statusCode()).toBe(200);
  });

  it("runs `npm run reseal` through the operator's client, and refuses it without credentials", async () => {
    const reseal = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
        const [command, args] = npmScript("reseal", "--url", base);
        execFile(command, args, { env: { ...process.env, ...env } }, (err, stdout, stderr) =>
          done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });
    const operator = { OPERATOR_CLIENT_ID: "8d9e0f1a2b3c4d5e6f708192", OPERATOR_CLIENT_SECRET: "operator-secret-7Lp4" };
    expect(await reseal(operator)).toMatchObject({
      code: 0,
      stdout: expect.stringContaining("No key rotation is under way"),
    });
    // The demo web client is no operator.
    const web = { OPERATOR_CLIENT_ID: "4f1c2a9d8e7b6c5a4f3e2d1c", OPERATOR_CLIENT_SECRET: "nd-web-secret-7Qm2" };
    expect(await reseal(web)).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("Only the operator's client rotates the data-protection key"),
    });
    expect(await reseal({ OPERATOR_CLIENT_ID: "", OPERATOR_CLIENT_SECRET: "" })).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("usage:"),
    });
  });
});
