from pkg.fused_loss import FusedLoss
