def define_model(opt):
    kind = opt["model"]
    if kind == "plain":
        from models.model_plain import ModelPlain as M
    elif kind == "gan":
        from models.model_gan import ModelGAN as M
    else:
        raise NotImplementedError(kind)
    m = M(opt)
    print("created", m.__class__.__name__)
    return m
