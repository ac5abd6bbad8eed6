/**
 * A "Submit to rlcourse" button on every notebook's toolbar.
 *
 * It does what the released notebooks' submit cell does, without running a cell: it saves the
 * notebook with JupyterLab's own save (so the file on disk is what the student sees), then asks
 * this Jupyter server's `jupyterlab_rlcourse` handler to submit that file. The handler holds the
 * hub token (`JUPYTERHUB_API_TOKEN`) and sends the notebook through rlcourse's own client; the
 * token never reaches the page. What comes back is the feedback the course's policy allows now,
 * as the same HTML the cell draws, shown here in a dialog with a link to the full page.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, Notification, Sanitizer, showDialog, ToolbarButton } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { Widget } from '@lumino/widgets';

/** The submit cell's tag and its nbgrader grade id's prefix (rlcourse.course.submission). */
const SUBMIT_CELL_TAG = 'rlcourse-submit';
const SUBMIT_GRADE_ID = /^submit_(.+)$/;

/** What the server's handler answers (jupyterlab_rlcourse.handlers). */
interface ISubmitted {
  submitted: boolean;
  html?: string;
  reason?: string;
  feedback_url?: string;
}

/**
 * The assignment this notebook belongs to: the submit cell's grade id (`submit_ps1` is ps1),
 * else the file's name without `.ipynb`.
 */
export function assignmentOf(panel: NotebookPanel): string {
  const cells = panel.content.model?.cells;
  if (cells) {
    for (let index = 0; index < cells.length; index++) {
      const metadata = cells.get(index).metadata as any;
      const tags: unknown = metadata?.tags;
      const gradeId: unknown = metadata?.nbgrader?.grade_id;
      if (Array.isArray(tags) && tags.includes(SUBMIT_CELL_TAG) && typeof gradeId === 'string') {
        const found = SUBMIT_GRADE_ID.exec(gradeId);
        if (found) {
          return found[1];
        }
      }
    }
  }
  const name = panel.context.path.split('/').pop() ?? '';
  return name.replace(/\.ipynb$/, '');
}

/** Ask this server's handler to submit the saved notebook; the handler waits for the grade. */
async function submitSaved(path: string, assignment: string): Promise<ISubmitted> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'rlcourse', 'submit');
  // makeRequest sends the server's token and the XSRF header that Jupyter's handlers require.
  const response = await ServerConnection.makeRequest(
    url,
    { method: 'POST', body: JSON.stringify({ path, assignment }) },
    settings
  );
  let body: ISubmitted;
  try {
    body = (await response.json()) as ISubmitted;
  } catch {
    // Not JSON: the route is not there, so this server does not load the server extension.
    const missing =
      response.status === 404
        ? "this Jupyter server does not run rlcourse's extension (jupyterlab_rlcourse): " +
          "run the notebook's Submit cell, or submit as the course's page says"
        : `the server answered ${response.status} ${response.statusText}`;
    body = { submitted: false, reason: missing };
  }
  if (!response.ok && body.submitted !== false) {
    body = { submitted: false, reason: (body as any).message ?? `the server answered ${response.status}` };
  }
  return body;
}

function feedbackWidget(html: string): Widget {
  const widget = new Widget();
  widget.addClass('rlcourse-feedback-dialog');
  // The HTML is escaped by the server (notebook_submit.feedback_html); sanitized again here.
  widget.node.innerHTML = new Sanitizer().sanitize(html);
  return widget;
}

/** Save, submit, show: the button's one action. */
export async function submitNotebook(panel: NotebookPanel, button: ToolbarButton): Promise<void> {
  const assignment = assignmentOf(panel);
  button.enabled = false;
  button.node.classList.add('rlcourse-submitting');
  // The graders take a while (a minute when many submit at once): say so until they are done.
  const progress = Notification.emit(
    `Submitting ${assignment}: the graders' feedback opens here when they are done`,
    'in-progress',
    { autoClose: false }
  );
  let result: ISubmitted;
  try {
    await panel.context.save();
    result = await submitSaved(panel.context.path, assignment);
  } catch (error) {
    result = { submitted: false, reason: `${error}` };
  } finally {
    Notification.dismiss(progress);
    button.enabled = true;
    button.node.classList.remove('rlcourse-submitting');
  }
  if (result.submitted && result.html) {
    await showDialog({
      title: `Submitted ${assignment}`,
      body: feedbackWidget(result.html),
      buttons: [Dialog.okButton({ label: 'Close' })]
    });
  } else {
    const body = new Widget();
    body.addClass('rlcourse-feedback-dialog');
    body.node.textContent = `Not submitted: ${result.reason ?? 'no reason given'}`;
    await showDialog({ title: `${assignment} was not submitted`, body, buttons: [Dialog.okButton()] });
  }
}

class SubmitButtonExtension implements DocumentRegistry.IWidgetExtension<NotebookPanel, INotebookModel> {
  createNew(panel: NotebookPanel): IDisposable {
    const button: ToolbarButton = new ToolbarButton({
      className: 'rlcourse-submit-button',
      label: 'Submit to rlcourse',
      tooltip: "Save this notebook and send it to the course's graders; their feedback opens here",
      onClick: () => void submitNotebook(panel, button)
    });
    panel.toolbar.insertItem(10, 'rlcourse-submit', button);
    return button;
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-rlcourse:submit-button',
  description: "A notebook toolbar button that submits the saved notebook to the course's rlcourse service",
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    app.docRegistry.addWidgetExtension('Notebook', new SubmitButtonExtension());
  }
};

export default plugin;
