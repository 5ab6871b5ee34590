from mixed import MixedTrainer


class TrainLoop:
    def __init__(self, model, data, opt, micro):
        self.model = model
        self.data = data
        self.opt = opt
        self.micro = micro
        self.trainer = MixedTrainer(model)
        self.step = 0

    def run_loop(self, steps):
        while self.step < steps:  # expect: TPU204
            batch, target = next(self.data)
            self.run_step(batch, target)
            self.step += 1

    def run_step(self, batch, target):
        for i in range(0, 8, self.micro):
            loss = (self.model(batch[i : i + self.micro]) - target[i : i + self.micro]).pow(2).mean()
            self.trainer.backward(loss)
        self.trainer.optimize(self.opt)
