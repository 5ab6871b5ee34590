"""Small ResNet on FakeData: train, validate each epoch, test at the end."""
import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms

from metrics import write_metrics

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cuda":
    cudnn.benchmark = True

torch.manual_seed(13)
transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
trainset = torchvision.datasets.FakeData(size=56, image_size=(3, 16, 16), num_classes=4, transform=transform, random_offset=0)
valset = torchvision.datasets.FakeData(size=16, image_size=(3, 16, 16), num_classes=4, transform=transform, random_offset=1000)
testset = torchvision.datasets.FakeData(size=16, image_size=(3, 16, 16), num_classes=4, transform=transform, random_offset=2000)
trainloader = torch.utils.data.DataLoader(trainset, batch_size=16, shuffle=False, num_workers=0, pin_memory=True)
valloader = torch.utils.data.DataLoader(valset, batch_size=8, shuffle=False, num_workers=0)
testloader = torch.utils.data.DataLoader(testset, batch_size=8, shuffle=False, num_workers=0)

net = torchvision.models.resnet18(num_classes=4)
net = net.to(device)
if device == "cuda":
    net = torch.nn.DataParallel(net)

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)


def train(epoch, losses):
    net.train()
    train_loss = 0
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        train_loss += loss.item()
        losses.append(loss.item())
    print(f"epoch {epoch}: train loss {train_loss / (batch_idx + 1):.3f}")


def validate(loader):
    net.eval()
    total_loss, correct, total = 0.0, 0, 0
    with torch.no_grad():
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            outputs = net(inputs)
            total_loss += criterion(outputs, targets).item()
            _, predicted = outputs.max(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()
    return total_loss / len(loader), correct, total


losses, val = [], []
for epoch in range(2):
    train(epoch, losses)
    val.append(validate(valloader))
test = validate(testloader)
write_metrics(losses=losses, val=val, test=test)
