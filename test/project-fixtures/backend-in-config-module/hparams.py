class HParams:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def create_hparams():
    return HParams(epochs=10, dist_backend="nccl", dist_url="tcp://localhost:54321", other_backend="gloo")
