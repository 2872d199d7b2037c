// Schema check of rendered Kubernetes manifests (multi-document YAML on stdin or in the files
// named): every object is validated against the Kubernetes API types of kubernetes-models, KEDA's
// CRD schemas (@kubernetes-models/keda), the Prometheus Operator's (ServiceMonitor), or, for
// gpuvpa's own GpuVerticalPodAutoscaler, the openAPIV3Schema of the CRD in the same input.
// Prints one line per object; exits 1 naming every object that fails, 2 on bad usage.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

// The packages live where deploy/setup-deps.sh installed them (package-lock.json beside this file).
const modules = path.resolve(process.env.GPUVPA_MANIFEST_CHECK_DIR ?? ".", "node_modules");
const yaml = createRequire(path.join(modules, "index.js"))("js-yaml");
const packages = {
  "keda.sh": "@kubernetes-models/keda",
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
};

async function modelClass(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const pkg = packages[group] ?? "kubernetes-models";
  const dir = packages[group] ? `${group}/${version}` : group ? `${group}/${version}` : version;
  const file = path.join(modules, pkg, dir, `${kind}.js`);
  if (!fs.existsSync(file)) return null;
  const mod = await import(pathToFileURL(file).href);
  return mod[kind] ?? null;
}

// A small validator for what structural CRD schemas use: type, properties, required,
// additionalProperties, items, enum, minimum/maximum, minLength/maxLength, pattern,
// x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields.
function checkSchema(schema, value, where, errors) {
  if (schema["x-kubernetes-preserve-unknown-fields"] && schema.type === undefined) return;
  if (schema["x-kubernetes-int-or-string"]) {
    if (typeof value !== "string" && !Number.isInteger(value)) errors.push(`${where}: not int-or-string`);
    return;
  }
  const t = schema.type;
  const typeOk = {
    object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
    array: Array.isArray,
    string: (v) => typeof v === "string",
    integer: Number.isInteger,
    number: (v) => typeof v === "number",
    boolean: (v) => typeof v === "boolean",
  }[t];
  if (typeOk && !typeOk(value)) {
    errors.push(`${where}: expected ${t}, got ${JSON.stringify(value)}`);
    return;
  }
  if (schema.enum && !schema.enum.includes(value)) errors.push(`${where}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`);
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${where}: ${value} < ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${where}: ${value} > ${schema.maximum}`);
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && value.length < schema.minLength) errors.push(`${where}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) errors.push(`${where}: longer than ${schema.maxLength}`);
    if (schema.pattern && !new RegExp(schema.pattern, "u").test(value)) errors.push(`${where}: ${JSON.stringify(value)} does not match ${schema.pattern}`);
  }
  if (t === "array" && schema.items) value.forEach((v, i) => checkSchema(schema.items, v, `${where}[${i}]`, errors));
  if (t === "object") {
    for (const r of schema.required ?? []) if (!(r in value)) errors.push(`${where}.${r}: required`);
    for (const [k, v] of Object.entries(value)) {
      if (schema.properties?.[k]) checkSchema(schema.properties[k], v, `${where}.${k}`, errors);
      else if (typeof schema.additionalProperties === "object") checkSchema(schema.additionalProperties, v, `${where}.${k}`, errors);
      else if (schema.properties && !schema["x-kubernetes-preserve-unknown-fields"] && !(where === "" && ["apiVersion", "kind", "metadata"].includes(k)))
        errors.push(`${where}.${k}: unknown field`);
    }
  }
}

const inputs = process.argv.length > 2 ? process.argv.slice(2).map((f) => fs.readFileSync(f === "-" ? 0 : f, "utf8")) : [fs.readFileSync(0, "utf8")];
const objects = inputs.flatMap((text) => yaml.loadAll(text)).filter((o) => o && typeof o === "object");
if (objects.length === 0) {
  console.error("no objects in the input");
  process.exit(2);
}
const crds = new Map();
for (const o of objects)
  if (o.kind === "CustomResourceDefinition")
    for (const v of o.spec.versions) crds.set(`${o.spec.group}/${v.name}/${o.spec.names.kind}`, v.schema.openAPIV3Schema);

let failed = 0;
for (const o of objects) {
  const id = `${o.apiVersion} ${o.kind} ${o.metadata?.namespace ? o.metadata.namespace + "/" : ""}${o.metadata?.name}`;
  const errors = [];
  const crd = crds.get(`${o.apiVersion}/${o.kind}`);
  if (crd) {
    checkSchema(crd, o, "", errors);
  } else {
    const Model = await modelClass(String(o.apiVersion), String(o.kind));
    if (!Model) errors.push("no schema known for this apiVersion and kind");
    else {
      try {
        new Model(o).validate();
      } catch (e) {
        errors.push(String(e.message ?? e));
      }
    }
  }
  if (!o.metadata?.name) errors.push("metadata.name is missing");
  if (errors.length) {
    failed++;
    console.log(`FAIL ${id}\n  ${errors.join("\n  ")}`);
  } else {
    console.log(`ok   ${id}`);
  }
}
console.log(`${objects.length - failed} of ${objects.length} objects valid`);
process.exit(failed ? 1 : 0);
