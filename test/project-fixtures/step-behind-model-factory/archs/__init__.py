import importlib

_modules = [importlib.import_module(f"archs.{n}") for n in ("sr_model",)]


def create_model(opt):
    for module in _modules:
        cls = getattr(module, opt["model_type"], None)
        if cls is not None:
            break
    model = cls(opt)
    return model
