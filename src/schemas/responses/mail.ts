/** The spec's Mail object, with its events; times in Unix seconds, as the spec shows them. */
import * as z from "zod/mini";
import { nullableText } from "./values";

export const mailSchema = z.object({
  template: z.string(),
  senderName: nullableText,
  senderEmail: z.string(),
  userName: nullableText,
  userEmail: z.string(),
  created: z.number(),
  token: z.string(),
  events: z.array(z.object({ event: z.string(), timestamp: z.number() })),
});

z.globalRegistry.add(mailSchema, { id: "Mail" });

export type Mail = z.infer<typeof mailSchema>;
