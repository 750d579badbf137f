#!/usr/bin/env node
// A native messaging host that does nothing but answer: the floor of Chrome's own transport. Each request
// {id, reply?} is answered {id, ok: true} or, with `reply: n`, with n bytes of text, so that both directions
// can be timed without any storage behind them.
import { Buffer } from "node:buffer";

let pending = Buffer.alloc(0);
const text = (n) => "abcdefghijklmnopqrstuvwxyz0123456789".repeat(Math.ceil(n / 36)).slice(0, n);

process.stdin.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  while (pending.length >= 4) {
    const length = pending.readUInt32LE(0);
    if (pending.length < 4 + length) return;
    const request = JSON.parse(pending.subarray(4, 4 + length).toString("utf8"));
    pending = pending.subarray(4 + length);
    const reply = Buffer.from(JSON.stringify({ id: request.id, ok: true, data: request.reply ? text(request.reply) : undefined }));
    const header = Buffer.alloc(4);
    header.writeUInt32LE(reply.length);
    process.stdout.write(Buffer.concat([header, reply]));
  }
});
process.stdin.on("end", () => process.exit(0));
