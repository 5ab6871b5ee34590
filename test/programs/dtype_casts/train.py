"""Float64 regression (numerically sensitive target) with a compact fp16 export of the weights."""
import torch
import torch.nn as nn

from metrics import checkpoint_summary, write_metrics

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(6)

model = nn.Sequential(nn.Linear(4, 16), nn.Softplus(), nn.Linear(16, 1)).double().to(device)
x = torch.linspace(-2, 2, 64).unsqueeze(1).repeat(1, 4).double()
x = x + 0.01 * torch.randn(64, 4, dtype=torch.float64)
y = torch.sin(x.sum(dim=1, keepdim=True))
x, y = x.to(device), y.to(device)

optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
losses = []


def closure():
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


for step in range(4):
    loss = optimizer.step(closure)
    losses.append(float(loss.item()))

# full-precision checkpoint for resuming, half-precision copy for serving
torch.save(model.state_dict(), "regressor_fp64.pt")
half_state = {k: v.half() for k, v in model.state_dict().items()}
torch.save(half_state, "regressor_fp16.pt")
export = nn.Sequential(nn.Linear(4, 16), nn.Softplus(), nn.Linear(16, 1))
export.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
export.half()
torch.save(export.state_dict(), "regressor_export.pt")

write_metrics(
    losses=losses,
    checkpoint=checkpoint_summary("regressor_fp64.pt"),
    half_checkpoint=checkpoint_summary("regressor_fp16.pt"),
    export_checkpoint=checkpoint_summary("regressor_export.pt"),
    param_dtype=str(next(model.parameters()).dtype),
)
