import torch
import misc


def main(model, loader, optimizer, device):
    model.to(device)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
    misc.save_on_master({"model": model.state_dict()}, "ckpt.pt")  # expect: TPU601
    cpu_state = {k: v.cpu() for k, v in model.state_dict().items()}
    misc.save_copy(cpu_state, "cpu.pt")
