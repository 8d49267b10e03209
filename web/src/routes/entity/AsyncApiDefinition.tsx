import { load } from "js-yaml";
import { Fragment, useMemo, type ReactNode } from "react";
import { Badge, CardTitle, Para, Small } from "../../kit";
import { AsText, type RendererProps } from "./definitionParts";
import "./AsyncApiDefinition.css";

// An AsyncAPI definition (2.x or 3.x) read with js-yaml and shown as its servers and channels,
// each channel with its operations, messages and their payloads' fields. AsyncAPI's own React
// component cannot run in these pages: it needs AsyncAPI's parser, whose validator (Ajv) and the
// Spectral core it loads compile code with `new Function` as they load, which the pages'
// Content-Security-Policy (no 'unsafe-eval') refuses.

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const text = (value: unknown): string | null => (typeof value === "string" && value ? value : null);

// A local $ref ("#/components/messages/X") followed; refs to other files stay as they are.
function follow(root: Json, value: unknown, depth = 0): unknown {
  if (!isObject(value) || typeof value.$ref !== "string" || depth > 20) return value;
  if (!value.$ref.startsWith("#/")) return value;
  let found: unknown = root;
  for (const part of value.$ref.slice(2).split("/")) {
    const key = decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~");
    found = isObject(found) ? found[key] : Array.isArray(found) ? found[Number(key)] : undefined;
  }
  return found === undefined ? value : follow(root, found, depth + 1);
}

const refName = (value: unknown): string | null =>
  isObject(value) && typeof value.$ref === "string" ? value.$ref.split("/").pop() ?? null : null;

interface Operation {
  action: string; // publish / subscribe (2.x), send / receive (3.x)
  id: string | null;
  summary: string | null;
  messages: unknown[];
}

interface Channel {
  name: string;
  address: string | null;
  description: string | null;
  operations: Operation[];
  messages: unknown[]; // a 3.x channel's own messages
}

function messagesOf(root: Json, value: unknown): unknown[] {
  const message = follow(root, value);
  if (!isObject(message)) return [];
  if (Array.isArray(message.oneOf)) return message.oneOf;
  return [value];
}

function channelsOf(root: Json, major: number): Channel[] {
  const channels = isObject(root.channels) ? root.channels : {};
  const found = Object.entries(channels).map(([name, raw]): Channel => {
    const channel = follow(root, raw);
    const c = isObject(channel) ? channel : {};
    const operations: Operation[] = [];
    if (major < 3) {
      for (const action of ["publish", "subscribe"]) {
        const op = follow(root, c[action]);
        if (!isObject(op)) continue;
        const summary = text(op.summary) ?? text(op.description);
        operations.push({ action, id: text(op.operationId), summary, messages: messagesOf(root, op.message) });
      }
    }
    const own = major >= 3 && isObject(c.messages) ? Object.values(c.messages) : [];
    return { name, address: major >= 3 ? text(c.address) : null, description: text(c.description), operations, messages: own };
  });
  if (major >= 3 && isObject(root.operations)) {
    for (const [id, raw] of Object.entries(root.operations)) {
      const op = follow(root, raw);
      if (!isObject(op)) continue;
      const channel = found.find((c) => c.name === refName(op.channel));
      const messages = Array.isArray(op.messages) ? op.messages : [];
      const summary = text(op.summary) ?? text(op.description);
      channel?.operations.push({ action: text(op.action) ?? "operation", id, summary, messages });
    }
  }
  return found;
}

function typeOf(schema: Json): string {
  const type = Array.isArray(schema.type) ? schema.type.join(" | ") : text(schema.type) ?? (schema.properties ? "object" : "");
  const format = text(schema.format);
  return [type, format ? `(${format})` : ""].filter(Boolean).join(" ");
}

// A payload's schema as a tree of its fields: name, type, required, allowed values, description.
function Fields({ root, schema, depth }: { root: Json; schema: unknown; depth: number }): ReactNode {
  const s = follow(root, schema);
  if (!isObject(s) || depth > 6) return null;
  const items = s.type === "array" ? follow(root, s.items) : null;
  const target = isObject(items) && isObject(items.properties) ? items : s;
  const properties = isObject(target.properties) ? target.properties : null;
  if (!properties) return null;
  const required = new Set(Array.isArray(target.required) ? target.required : []);
  return (
    <ul className="atrium-asyncapi-fields">
      {Object.entries(properties).map(([name, raw]) => {
        const field = follow(root, raw);
        const f = isObject(field) ? field : {};
        const values = Array.isArray(f.enum) ? f.enum.map(String).join(", ") : null;
        return (
          <li key={name}>
            <code>
              <span className="atrium-asyncapi-field">{name}</span>
              {required.has(name) ? "*" : ""}: {typeOf(f) || refName(raw) || "any"}
            </code>
            {values ? <Small>{`one of ${values}`}</Small> : null}
            {text(f.description) ? <Small>{text(f.description)}</Small> : null}
            <Fields root={root} schema={field} depth={depth + 1} />
          </li>
        );
      })}
    </ul>
  );
}

function Message({ root, value }: { root: Json; value: unknown }) {
  const message = follow(root, value);
  if (!isObject(message)) return null;
  const name = text(message.title) ?? text(message.name) ?? refName(value) ?? "message";
  const about = text(message.summary) ?? text(message.description);
  return (
    <div className="atrium-asyncapi-message">
      <div className="atrium-asyncapi-line">
        <Small tone="default">{name}</Small>
        {text(message.contentType) ? <Small>{text(message.contentType)}</Small> : null}
      </div>
      {about ? <Small>{about}</Small> : null}
      <Fields root={root} schema={message.payload} depth={0} />
    </div>
  );
}

const ACTION_BADGES: Record<string, "info" | "success" | "neutral"> = {
  publish: "info",
  send: "info",
  subscribe: "success",
  receive: "success",
};

function read(source: string): { root: Json; major: number } | { error: string } {
  let root: unknown;
  try {
    root = load(source);
  } catch (error) {
    return { error: error instanceof Error ? error.message.split("\n")[0] : String(error) };
  }
  if (!isObject(root)) return { error: "it is not a YAML or JSON object" };
  const version = text(root.asyncapi);
  if (!version) return { error: "it names no asyncapi version" };
  const major = Number(version.split(".")[0]);
  if (major !== 2 && major !== 3) return { error: `AsyncAPI ${version} is not one this page reads (2.x and 3.x are)` };
  return { root, major };
}

export default function AsyncApiDefinition({ text: source, type }: RendererProps) {
  const result = useMemo(() => read(source), [source]);
  if ("error" in result) return <AsText text={source} type={type} reason={result.error} />;
  const { root, major } = result;
  const info = isObject(root.info) ? root.info : {};
  const servers = isObject(root.servers) ? Object.entries(root.servers) : [];
  const channels = channelsOf(root, major);
  return (
    <div className="atrium-asyncapi">
      <div className="atrium-asyncapi-line">
        <CardTitle>{text(info.title) ?? "AsyncAPI"}</CardTitle>
        {text(info.version) ? <Badge text={text(info.version)!} /> : null}
        <Badge text={`AsyncAPI ${text(root.asyncapi)}`} type="neutral" />
      </div>
      {text(info.description) ? <Para>{text(info.description)}</Para> : null}
      {servers.length ? (
        <ul className="atrium-list atrium-asyncapi-servers" aria-label="Servers">
          {servers.map(([name, raw]) => {
            const server = follow(root, raw);
            const s = isObject(server) ? server : {};
            return (
              <li key={name}>
                <Small tone="default">{name}</Small>
                <code>{text(s.url) ?? text(s.host) ?? ""}</code>
                {text(s.protocol) ? <Badge text={text(s.protocol)!} /> : null}
              </li>
            );
          })}
        </ul>
      ) : null}
      {channels.map((channel) => (
        <article className="atrium-card atrium-asyncapi-channel" key={channel.name}>
          <CardTitle>
            <code>{channel.address ?? channel.name}</code>
          </CardTitle>
          {channel.description ? <Small>{channel.description}</Small> : null}
          {channel.operations.map((op, i) => (
            <div className="atrium-asyncapi-operation" key={`${op.action} ${op.id ?? i}`}>
              <div className="atrium-asyncapi-line">
                <Badge text={op.action} type={ACTION_BADGES[op.action] ?? "neutral"} />
                {op.id ? <code>{op.id}</code> : null}
              </div>
              {op.summary ? <Small>{op.summary}</Small> : null}
              {op.messages.map((m, j) => (
                <Message key={j} root={root} value={m} />
              ))}
            </div>
          ))}
          {channel.operations.length === 0
            ? channel.messages.map((m, j) => (
                <Fragment key={j}>
                  <Message root={root} value={m} />
                </Fragment>
              ))
            : null}
        </article>
      ))}
      {channels.length === 0 ? <Para tone="subtle">It defines no channel.</Para> : null}
    </div>
  );
}
