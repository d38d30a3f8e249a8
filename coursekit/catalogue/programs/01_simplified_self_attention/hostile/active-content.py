# description: a wrong softmax whose cell displays what a browser would run (JavaScript, HTML with a
#   script and an image whose onerror runs code, SVG with an onload, Markdown with raw HTML, a "PNG"
#   whose data closes the image's src), and a Markdown cell of raw HTML added at the end: the
#   formgrader renders the autograded notebook where the instructor is signed in, so any of it could
#   set the submission's own manual grade through the formgrader's API
# source: written for this catalogue
# replaces: softmax
# loses: softmax
# baseline: softmax-wrong-axis
# transform: add_markdown 01_simplified_self_attention/hostile/active-content.md

from IPython.display import HTML, SVG, Javascript, Markdown, display

display(Javascript("window.ACTIVE_CONTENT_RAN = 'javascript'"))
display(HTML("<script>window.ACTIVE_CONTENT_RAN = 'html: script'</script>"
             "<img src=x onerror=\"window.ACTIVE_CONTENT_RAN = 'html: img'\">"))
display(SVG("<svg xmlns='http://www.w3.org/2000/svg' onload=\"window.ACTIVE_CONTENT_RAN = 'svg'\"></svg>"))
display(Markdown("<img src=x onerror=\"window.ACTIVE_CONTENT_RAN = 'markdown output'\">"))
display({"image/png": "x\" onerror=\"window.ACTIVE_CONTENT_RAN = 'png'", "text/plain": "a picture"}, raw=True)


def softmax(x, axis=-1):
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
