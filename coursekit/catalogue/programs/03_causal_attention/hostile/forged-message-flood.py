# description: masked_softmax fills with 0, and its cell sends, on the kernel's own IOPub socket
#   and signed with the kernel's key (as any code in the kernel can), a stream message whose text
#   is 5 million empty lists: such a message once took the grading process to 18 GB and 172 s in
#   nbformat's validation; now it is unpacked within bounds and dropped, and costs nothing but
#   itself
# source: written for this catalogue (red team r44)
# replaces: masked_softmax
# loses: masked_softmax
# baseline: masked-softmax-fill-zero


def masked_softmax(scores, mask):
    return torch.softmax(scores.masked_fill(mask, 0.0), dim=-1)


kernel = get_ipython().kernel
kernel.session.send(kernel.iopub_socket, "stream", {"name": "stdout", "text": [[]] * 5_000_000},
                    parent=kernel.get_parent("shell"))
