/**
 * The seam between the program model (values in one module) and the project scope (the module graph): a call whose
 * target is a function or class of another project module is answered by that module's model, built once per loaded
 * module and reused by every file that imports it.
 */
import { ProgramModel, type CallResolver } from './index';
import type { ModuleEntry, ProjectView } from './project';

const resolvers = new WeakMap<ProjectView, CallResolver>();

/** The cross-module resolver of a project (one per project view; models per module, dropped with the module entry). */
export function projectResolver(project: ProjectView): CallResolver {
  let r = resolvers.get(project);
  if (r) return r;
  const models = new WeakMap<ModuleEntry, ProgramModel>();
  const resolver: CallResolver = (call, model) => {
    const hit = project.resolveCall(call, model.sema, model.path);
    if (!hit || (hit.kind !== 'function' && hit.kind !== 'class')) return null;
    let m = models.get(hit.module);
    if (!m) models.set(hit.module, (m = new ProgramModel(hit.module.sema, hit.path, [resolver])));
    return { def: hit.def, model: m, path: hit.path };
  };
  resolvers.set(project, (r = resolver));
  return r;
}
