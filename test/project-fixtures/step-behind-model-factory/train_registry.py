from archs import create_model


def main(opt, prefetcher):
    model = create_model(opt)
    step = 0
    for epoch in range(10):
        prefetcher.reset()
        batch = prefetcher.next()
        while batch is not None:  # expect: TPU204
            step += 1
            model.feed_data(batch)
            model.optimize_parameters(step)
            batch = prefetcher.next()

# --- ok: a loop over a factory's object that never trains ---


def export(opt, nets):
    model = create_model(opt)
    for i in range(3):
        model.save(nets)
